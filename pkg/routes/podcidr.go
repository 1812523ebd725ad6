package routes

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A Node's spec.podCIDRs is written by kube-controller-manager's IPAM, but
// a kubelet may register its Node with any pod CIDR it likes (NodeRestriction
// lets a node create its own Node). Each becomes a router route and an
// allowed address pair on the node's port, so a crafted one (another
// node's range, 0.0.0.0/0) would steer or open others' traffic. A pod CIDR
// is therefore written to Neutron only when it lies inside --cluster-cidr,
// overlaps no other node's, and is no wider than a node's share. The zero
// PodCIDRPolicy checks the shape and the default shares but not
// containment.

// Node CIDR mask sizes of kube-controller-manager's defaults
// (--node-cidr-mask-size-ipv4/-ipv6), used when the CCM is not given its
// own (the same flags, which should carry kube-controller-manager's values).
const (
	defaultNodeMaskIPv4 = 24
	defaultNodeMaskIPv6 = 64
)

// NodeCIDRMaskSizes are kube-controller-manager's --node-cidr-mask-size
// flags; 0 is unset.
type NodeCIDRMaskSizes struct {
	// Any is --node-cidr-mask-size: the size of a single-stack
	// --cluster-cidr's family, refused with a dual-stack one.
	Any int
	// IPv4 and IPv6 are --node-cidr-mask-size-ipv4/-ipv6.
	IPv4, IPv6 int
}

// PodCIDRPolicy checks a node's pod CIDR before any route is written.
type PodCIDRPolicy struct {
	// clusterCIDRs are --cluster-cidr's; empty: containment not checked
	// (the CCM was not given them).
	clusterCIDRs []netip.Prefix
	// maskV4 and maskV6 are the narrowest a pod CIDR may be widened to
	// (0: the defaults above).
	maskV4, maskV6 int
}

// NewPodCIDRPolicy parses --cluster-cidr (comma-separated) and settles
// the node mask sizes as kube-controller-manager does: --node-cidr-mask-size
// is for a single-stack cluster (its family's size; with no --cluster-cidr
// it is taken for each family it fits), the -ipv4/-ipv6 ones for either,
// each no wider than its family's cluster CIDR.
func NewPodCIDRPolicy(clusterCIDR string, masks NodeCIDRMaskSizes) (PodCIDRPolicy, error) {
	cidrs, err := parseClusterCIDRs(clusterCIDR)
	if err != nil {
		return PodCIDRPolicy{}, err
	}
	var errs []error
	check := func(flag string, v, most int) {
		if v < 0 || v > most {
			errs = append(errs, fmt.Errorf("--%s %d: want 1 to %d", flag, v, most))
		}
	}
	check("node-cidr-mask-size", masks.Any, 128)
	check("node-cidr-mask-size-ipv4", masks.IPv4, 32)
	check("node-cidr-mask-size-ipv6", masks.IPv6, 128)
	var v4, v6 []netip.Prefix
	for _, c := range cidrs {
		if c.Addr().Is4() {
			v4 = append(v4, c)
		} else {
			v6 = append(v6, c)
		}
	}
	p := PodCIDRPolicy{clusterCIDRs: cidrs, maskV4: masks.IPv4, maskV6: masks.IPv6}
	if masks.Any > 0 {
		switch {
		case len(v4) > 0 && len(v6) > 0:
			errs = append(errs, fmt.Errorf("--node-cidr-mask-size is for a single-stack --cluster-cidr; %s is dual-stack: use --node-cidr-mask-size-ipv4 and -ipv6", joinPrefixes(cidrs)))
		case len(v6) > 0:
			p.maskV6 = masks.Any
		case len(v4) > 0:
			p.maskV4 = masks.Any
		default:
			p.maskV6 = masks.Any
			if masks.Any <= 32 {
				p.maskV4 = masks.Any
			}
		}
		if len(v4) > 0 && len(v6) == 0 && masks.Any > 32 {
			errs = append(errs, fmt.Errorf("--node-cidr-mask-size %d: an IPv4 --cluster-cidr takes 1 to 32", masks.Any))
		}
	}
	for _, c := range cidrs {
		mask, flag := p.maskV4, "node-cidr-mask-size-ipv4"
		if mask == 0 {
			mask = defaultNodeMaskIPv4
		}
		if c.Addr().Is6() {
			mask, flag = p.maskV6, "node-cidr-mask-size-ipv6"
			if mask == 0 {
				mask = defaultNodeMaskIPv6
			}
		}
		if mask < c.Bits() {
			errs = append(errs, fmt.Errorf("node CIDR mask size /%d (--%s or --node-cidr-mask-size) is wider than --cluster-cidr %s", mask, flag, c))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return PodCIDRPolicy{}, err
	}
	return p, nil
}

// parseClusterCIDRs parses --cluster-cidr (comma-separated).
func parseClusterCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("--cluster-cidr %q: %w", f, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Refuse says why node's pod CIDR must not be routed ("" when it may).
// Of two nodes claiming overlapping CIDRs the one registered later (the
// IPAM gives disjoint ranges: the later claim is the crafted one) is
// refused.
func (p PodCIDRPolicy) Refuse(node, cidr string, nodes []corev1.Node) string {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return fmt.Sprintf("pod CIDR %q of node %s is not a CIDR", cidr, node)
	}
	if prefix != prefix.Masked() {
		return fmt.Sprintf("pod CIDR %s of node %s has host bits set", cidr, node)
	}
	mask, family := p.maskV4, "IPv4"
	if mask == 0 {
		mask = defaultNodeMaskIPv4
	}
	if prefix.Addr().Is6() {
		mask, family = p.maskV6, "IPv6"
		if mask == 0 {
			mask = defaultNodeMaskIPv6
		}
	}
	if prefix.Bits() < mask {
		return fmt.Sprintf("pod CIDR %s of node %s is wider than a node's /%d (the %s node CIDR mask size, --node-cidr-mask-size)", cidr, node, mask, family)
	}
	if len(p.clusterCIDRs) > 0 && !within(prefix, p.clusterCIDRs) {
		return fmt.Sprintf("pod CIDR %s of node %s is outside --cluster-cidr %s", cidr, node, joinPrefixes(p.clusterCIDRs))
	}
	var self *corev1.Node
	for i := range nodes {
		if nodes[i].Name == node {
			self = &nodes[i]
		}
	}
	for i := range nodes {
		other := &nodes[i]
		if other.Name == node || (self != nil && registeredBefore(self, other)) {
			continue
		}
		for _, oc := range podCIDRsOf(other) {
			if o, err := netip.ParsePrefix(oc); err == nil && o.Overlaps(prefix) {
				return fmt.Sprintf("pod CIDR %s of node %s overlaps %s of node %s, registered earlier", cidr, node, oc, other.Name)
			}
		}
	}
	return ""
}

// registeredBefore reports whether a was registered before b (by name on a
// tie, so that exactly one of two is first).
func registeredBefore(a, b *corev1.Node) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

func podCIDRsOf(n *corev1.Node) []string {
	if len(n.Spec.PodCIDRs) > 0 {
		return n.Spec.PodCIDRs
	}
	if n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return nil
}

func within(p netip.Prefix, in []netip.Prefix) bool {
	for _, c := range in {
		if c.Bits() <= p.Bits() && c.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}
