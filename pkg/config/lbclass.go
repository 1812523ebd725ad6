package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// LBClass is a [LoadBalancerClass "name"] section: a named set of networks
// a Service picks with the annotation loadbalancer.openstack.org/class, as
// in the upstream OpenStack CCM. Its floating network and subnet take
// precedence over the Service's annotations; its VIP and member subnets
// are the default when the Service does not set them.
type LBClass struct {
	FloatingNetworkID  string // floating-network-id
	FloatingSubnetID   string // floating-subnet-id
	FloatingSubnet     string // floating-subnet: a name, a glob, "~regexp"; "!" negates
	FloatingSubnetTags string // floating-subnet-tags: "tag1,tag2" (any), "&..." (all), "!..." (negated)
	NetworkID          string // network-id
	SubnetID           string // subnet-id
	MemberSubnetID     string // member-subnet-id
	// LBProvider (lb-provider, a Stackward addition) is the Octavia
	// provider of the class's load balancers, e.g. "ovn"; it decides the
	// defaults and refusals of loadbalancer/providers.go.
	LBProvider string

	line int // of its header, for Validate's messages
}

func (c *LBClass) empty() bool {
	return *c == LBClass{line: c.line}
}

// classSection starts (or continues: gcfg merges repeated sections) the
// class named by a quoted subsection.
func (p *parser) classSection(n int, quoted string) (map[string]field, bool) {
	name, err := strconv.Unquote(quoted)
	if err != nil || name == "" {
		p.probs.add(n, "", "", "[LoadBalancerClass %s]: the class name must be a non-empty double-quoted string", quoted)
		return nil, false
	}
	if p.cfg.LoadBalancer.Classes == nil {
		p.cfg.LoadBalancer.Classes = map[string]*LBClass{}
	}
	c := p.cfg.LoadBalancer.Classes[name]
	if c == nil {
		c = &LBClass{line: n}
		p.cfg.LoadBalancer.Classes[name] = c
	}
	fields := map[string]field{
		"floating-network-id":  str(&c.FloatingNetworkID),
		"floating-subnet-id":   str(&c.FloatingSubnetID),
		"floating-subnet":      subnetPattern(&c.FloatingSubnet),
		"floating-subnet-tags": str(&c.FloatingSubnetTags),
		"network-id":           str(&c.NetworkID),
		"subnet-id":            str(&c.SubnetID),
		"member-subnet-id":     str(&c.MemberSubnetID),
		"lb-provider":          str(&c.LBProvider),
	}
	for k, f := range fields {
		f.canonical = k
		fields[k] = f
	}
	return fields, true
}

// subnetPattern is a floating-subnet key, checked where it is read.
func subnetPattern(p *string) field {
	return field{set: func(v string, _ bool) error {
		if _, err := SubnetNameMatcher(v); err != nil {
			return err
		}
		*p = v
		return nil
	}}
}

// SubnetNameMatcher compiles an upstream floating-subnet pattern: a leading
// "!" negates it; the rest is a regular expression after "~", else a glob
// ("*" any run, "?" one character) or a plain name. The whole name must
// match.
func SubnetNameMatcher(pattern string) (func(name string) bool, error) {
	neg := strings.HasPrefix(pattern, "!")
	pattern = strings.TrimPrefix(pattern, "!")
	var expr string
	if strings.HasPrefix(pattern, "~") {
		expr = pattern[1:]
	} else {
		var b strings.Builder
		for _, r := range pattern {
			switch r {
			case '*':
				b.WriteString(".*")
			case '?':
				b.WriteString(".")
			default:
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		expr = b.String()
	}
	re, err := regexp.Compile("^(?:" + expr + ")$")
	if err != nil {
		return nil, fmt.Errorf("invalid subnet name pattern %q: %w", pattern, err)
	}
	return func(name string) bool { return re.MatchString(name) != neg }, nil
}

// SubnetTags reads an upstream floating-subnet-tags value: the tags, and
// whether all must be present ("&") and whether the match is negated ("!").
func SubnetTags(spec string) (tags []string, all, negate bool) {
	negate = strings.HasPrefix(spec, "!")
	spec = strings.TrimPrefix(spec, "!")
	all = strings.HasPrefix(spec, "&")
	spec = strings.TrimPrefix(spec, "&")
	for _, t := range strings.Split(spec, ",") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	return tags, all, negate
}

func (c *Config) validateClasses(p *problems) {
	for name, cls := range c.LoadBalancer.Classes {
		if cls.empty() {
			p.add(cls.line, fmt.Sprintf("LoadBalancerClass %q", name), "", "empty class: set floating-network-id, floating-subnet-id, floating-subnet, floating-subnet-tags, network-id, subnet-id, member-subnet-id or lb-provider")
		}
	}
}
