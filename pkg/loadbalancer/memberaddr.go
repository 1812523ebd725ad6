package loadbalancer

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Which of a node's addresses becomes its member address. A node with
// several NICs has several InternalIPs, and the first one (what the
// kubelet lists first) is not always on the network the load balancer
// reaches the nodes on (upstream CCM issue 3090):
//   - with member-subnet-id (config, class or annotation) a node's member
//     address is its first address inside that subnet; a node with none
//     there keeps its first address, as before;
//   - loadbalancer.openstack.org/member-address-type: ExternalIP makes the
//     members the nodes' ExternalIPs (a NIC on a provider network the
//     load balancer reaches), InternalIP (the default) their InternalIPs.

// AnnotationMemberAddressType chooses the type of node address members use.
const AnnotationMemberAddressType = "loadbalancer.openstack.org/member-address-type"

// memberAddressType parses the annotation: InternalIP by default.
func (p *annotationParser) memberAddressType() corev1.NodeAddressType {
	v, ok := p.a[AnnotationMemberAddressType]
	if !ok || v == "" {
		return corev1.NodeInternalIP
	}
	switch {
	case strings.EqualFold(v, string(corev1.NodeInternalIP)):
		return corev1.NodeInternalIP
	case strings.EqualFold(v, string(corev1.NodeExternalIP)):
		return corev1.NodeExternalIP
	}
	p.fail(AnnotationMemberAddressType, v, "must be InternalIP or ExternalIP")
	return corev1.NodeInternalIP
}

// resolveMemberSubnet reads the member subnet's CIDR (once per subnet: a
// subnet's CIDR never changes) so that members can follow it.
func (m *Manager) resolveMemberSubnet(ctx context.Context, o *options) error {
	if o.memberSubnetID == "" {
		return nil
	}
	m.mu.Lock()
	cidr, ok := m.subnetCIDRs[o.memberSubnetID]
	m.mu.Unlock()
	if !ok {
		var err error
		if cidr, err = m.Neutron.SubnetCIDR(ctx, o.memberSubnetID); err != nil {
			return fmt.Errorf("read member subnet %s: %w", o.memberSubnetID, err)
		}
		m.mu.Lock()
		if m.subnetCIDRs == nil {
			m.subnetCIDRs = map[string]string{}
		}
		m.subnetCIDRs[o.memberSubnetID] = cidr
		m.mu.Unlock()
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return fmt.Errorf("member subnet %s has CIDR %q: %w", o.memberSubnetID, cidr, err)
	}
	o.memberSubnet = p
	return nil
}

// memberAddress is the node's address of the family that members use:
// of the chosen type, inside the member subnet when it has one there.
func memberAddress(o *options, n *corev1.Node, v6 bool) string {
	typ := o.memberAddressType
	if typ == "" {
		typ = corev1.NodeInternalIP
	}
	first := ""
	for _, a := range n.Status.Addresses {
		if a.Type != typ || strings.Contains(a.Address, ":") != v6 {
			continue
		}
		if first == "" {
			first = a.Address
		}
		if !o.memberSubnet.IsValid() {
			break
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && o.memberSubnet.Contains(ip) {
			return a.Address
		}
	}
	return first
}
