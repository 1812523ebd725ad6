package loadbalancer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// IP families, as the upstream CCM handles them: one load balancer per
// Service, of the Service's first IP family (spec.ipFamilies[0]). An IPv6
// load balancer has its VIP on the nodes' IPv6 subnet and no floating IP
// (Neutron has none for IPv6): the VIP is the ingress, and
// spec.loadBalancerIP, when set, is that VIP. The members are the nodes'
// InternalIPs of the same family (members in spec.go). A dual-stack
// Service (ipFamilyPolicy PreferDualStack or RequireDualStack) therefore
// gets the load balancer of its first family only, as upstream.

// parseFamily reads the Service's first IP family into o.
func parseFamily(svc *corev1.Service, o *options) {
	o.ipv6 = len(svc.Spec.IPFamilies) > 0 && svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	if o.ipv6 {
		o.internal = true
	}
}

// vipSubnet is the subnet of the nodes' addresses of the Service's family,
// for a new load balancer when the config names no VIP subnet or network.
func (m *Manager) vipSubnet(ctx context.Context, o *options, nodes []*corev1.Node) (string, error) {
	if !o.ipv6 {
		return m.detectNodeSubnet(ctx, nodes)
	}
	for _, n := range nodes {
		if ip := internalIP(n, true); ip != "" {
			subnet, err := m.Neutron.SubnetOfAddress(ctx, ip)
			if err != nil {
				return "", fmt.Errorf("find the IPv6 subnet of node %s (%s) for the VIP; or set subnet-id in [LoadBalancer]: %w", n.Name, ip, err)
			}
			return subnet, nil
		}
	}
	return "", fmt.Errorf("the Service's first IP family is IPv6 but no node has an IPv6 InternalIP to find the VIP subnet from; set subnet-id in [LoadBalancer] or the annotation %s", AnnotationSubnetID)
}
