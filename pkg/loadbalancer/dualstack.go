package loadbalancer

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// IP families. A single-stack Service gets, as upstream, a load balancer
// of its one family: an IPv6 one has its VIP on the nodes' IPv6 subnet and
// no floating IP (Neutron has none for IPv6), so the VIP is the ingress.
//
// A dual-stack Service (two spec.ipFamilies, which the apiserver sets for
// PreferDualStack and RequireDualStack on a dual-stack cluster) gets ONE
// load balancer with a VIP of each family, where upstream builds the first
// family only: the primary VIP of spec.ipFamilies[0] and an Octavia
// additional VIP (API 2.26) of the other family, on the subnet of the
// nodes' addresses of that family, in the same create call. Its pools hold
// both addresses of every node; the ingress lists the primary family
// first, the IPv4 VIP as its floating IP when it has one.
//
// Octavia cannot add a VIP to an existing load balancer. A Service turned
// RequireDualStack after its load balancer was made single-stack is
// refused (ErrImmutable, an Event): delete and recreate the Service,
// keeping the address with keep-floatingip or spec.loadBalancerIP. A
// PreferDualStack one keeps serving its first family, as it does when no
// node has an address of the second family when the load balancer is
// created. A Service turned single-stack keeps its second VIP unused.

// parseFamily reads the Service's IP families into o.
func parseFamily(svc *corev1.Service, o *options) {
	o.ipv6 = len(svc.Spec.IPFamilies) > 0 && svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	o.dualStack = len(svc.Spec.IPFamilies) == 2
	o.requireDualStack = o.dualStack && svc.Spec.IPFamilyPolicy != nil && *svc.Spec.IPFamilyPolicy == corev1.IPFamilyPolicyRequireDualStack
	o.publicWanted = !o.internal
	if o.ipv6 {
		// Public again only through an IPv4 additional VIP (resolveFamilies).
		o.internal = true
	}
}

// serviceFamilies are the families a Service's ingress lists, in order;
// nil for a single-stack Service.
func serviceFamilies(svc *corev1.Service) []corev1.IPFamily {
	if len(svc.Spec.IPFamilies) == 2 {
		return svc.Spec.IPFamilies
	}
	return nil
}

// resolveFamilies finds the additional VIP's subnet of a new dual-stack
// load balancer, and decides whether an existing one can serve the
// Service's families.
func (m *Manager) resolveFamilies(ctx context.Context, o *options, lb *LoadBalancer, nodes []*corev1.Node) error {
	if !o.dualStack {
		return nil
	}
	second := !o.ipv6 // the family of the additional VIP: true is IPv6
	if lb != nil {
		if vipOf(lb, second) == "" {
			if o.requireDualStack {
				return fmt.Errorf("load balancer %s (%s) has no %s VIP and the Service is RequireDualStack: Octavia cannot add a VIP to an existing load balancer; delete and recreate the Service (set %s=true or spec.loadBalancerIP to keep its address) %w",
					lb.Name, lb.ID, familyName(second), AnnotationKeepFloatingIP, ErrImmutable)
			}
			klog.FromContext(ctx).Info("PreferDualStack Service served by its first IP family only: the load balancer has no VIP of the second and Octavia cannot add one; recreate the Service to get it",
				"loadBalancer", lb.Name, "missing", familyName(second))
			o.dualStack = false
		}
		if o.ipv6 && o.dualStack {
			o.internal = !o.publicWanted
		}
		return nil
	}
	subnet, err := m.familySubnet(ctx, nodes, second)
	if err != nil {
		return err
	}
	if subnet == "" {
		if o.requireDualStack {
			return fmt.Errorf("the Service is RequireDualStack but no node has an %s InternalIP to find the subnet of the second VIP from", familyName(second))
		}
		klog.FromContext(ctx).Info("PreferDualStack Service gets a load balancer of its first IP family only: no node has an address of the second", "missing", familyName(second))
		o.dualStack = false
		return nil
	}
	o.additionalSubnetID = subnet
	if o.ipv6 {
		o.internal = !o.publicWanted // the IPv4 additional VIP takes the floating IP
	}
	return nil
}

func familyName(v6 bool) string {
	if v6 {
		return "IPv6"
	}
	return "IPv4"
}

// familySubnet is the subnet of the first node address of a family, ""
// when no node has one.
func (m *Manager) familySubnet(ctx context.Context, nodes []*corev1.Node, v6 bool) (string, error) {
	for _, n := range nodes {
		if ip := internalIP(n, v6); ip != "" {
			subnet, err := m.Neutron.SubnetOfAddress(ctx, ip)
			if err != nil {
				return "", fmt.Errorf("find the %s subnet of node %s (%s) for the VIP: %w", familyName(v6), n.Name, ip, err)
			}
			return subnet, nil
		}
	}
	return "", nil
}

// vipSubnet is the subnet of the nodes' addresses of the Service's family,
// for a new load balancer when the config names no VIP subnet or network.
func (m *Manager) vipSubnet(ctx context.Context, o *options, nodes []*corev1.Node) (string, error) {
	if !o.ipv6 {
		return m.detectNodeSubnet(ctx, nodes)
	}
	subnet, err := m.familySubnet(ctx, nodes, true)
	if err != nil {
		return "", fmt.Errorf("%w; or set subnet-id in [LoadBalancer]", err)
	}
	if subnet == "" {
		return "", fmt.Errorf("the Service's first IP family is IPv6 but no node has an IPv6 InternalIP to find the VIP subnet from; set subnet-id in [LoadBalancer] or the annotation %s", AnnotationSubnetID)
	}
	return subnet, nil
}

// vipOf returns the load balancer's VIP of a family, primary or additional.
func vipOf(lb *LoadBalancer, v6 bool) string {
	for _, a := range append([]string{lb.VIPAddress}, additionalAddresses(lb)...) {
		if ip, err := netip.ParseAddr(a); err == nil && ip.Is6() == v6 {
			return a
		}
	}
	return ""
}

func additionalAddresses(lb *LoadBalancer) []string {
	var out []string
	for _, v := range lb.AdditionalVIPs {
		out = append(out, v.Address)
	}
	return out
}

// dualStackStatus is the ingress of a dual-stack Service: per family in
// the Service's order, the floating IPs for IPv4 when there are any, else
// the VIP of that family.
func dualStackStatus(lb *LoadBalancer, fips []FloatingIP, families []corev1.IPFamily, sortedFIPs []string) []string {
	var ips []string
	for _, f := range families {
		v6 := f == corev1.IPv6Protocol
		if !v6 && len(fips) > 0 {
			ips = append(ips, sortedFIPs...)
			continue
		}
		if a := vipOf(lb, v6); a != "" {
			ips = append(ips, a)
		}
	}
	return ips
}
