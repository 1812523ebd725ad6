package app

import (
	"fmt"
	"strings"
)

// netipList is a repeatable, comma-separated flag of IPs or CIDRs with
// pflag's slice semantics (those of stackward-ccm's list flags): the first
// use replaces the default, later ones append.
type netipList[T fmt.Stringer] struct {
	list  *[]T
	parse func(string) (T, error)
	kind  string
	set   bool
}

func (p *netipList[T]) String() string {
	s := make([]string, 0, len(*p.list))
	for _, x := range *p.list {
		s = append(s, x.String())
	}
	return "[" + strings.Join(s, ",") + "]"
}

func (p *netipList[T]) Set(v string) error {
	if !p.set {
		*p.list, p.set = nil, true
	}
	for _, f := range strings.Split(v, ",") {
		x, err := p.parse(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("%q is not %s: %w", f, p.kind, err)
		}
		*p.list = append(*p.list, x)
	}
	return nil
}

func (p *netipList[T]) Type() string {
	if p.kind == "a CIDR" {
		return "cidrs"
	}
	return "ips"
}

// namespacedName is a namespace/name flag.
type namespacedName struct{ ns, name *string }

func (n *namespacedName) String() string {
	if *n.name == "" {
		return ""
	}
	return *n.ns + "/" + *n.name
}

func (n *namespacedName) Set(v string) error {
	ns, name, ok := strings.Cut(v, "/")
	if v == "" {
		*n.ns, *n.name = "", ""
		return nil
	}
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("%q: want namespace/name", v)
	}
	*n.ns, *n.name = ns, name
	return nil
}

func (n *namespacedName) Type() string { return "namespace/name" }
