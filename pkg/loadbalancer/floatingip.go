package loadbalancer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// resolve fills in what neither the config nor the annotations say, with
// as few lookups as possible, each done once per process:
//   - the VIP subnet of a new load balancer: the subnet of the nodes'
//     addresses (the first node's port);
//   - the floating network of a public load balancer: the one external
//     network, when there is exactly one. Several is an error naming them
//     (a guess could put the VIP on the wrong network).
//
// First of all, a port-id a load balancer is to be created on must be the
// Service's to use (portid.go).
func (m *Manager) resolve(ctx context.Context, svc *corev1.Service, o *options, lb *LoadBalancer, nodes []*corev1.Node) error {
	if err := m.checkVIPPort(ctx, o, lb); err != nil {
		return err
	}
	if err := m.resolveFamilies(ctx, o, lb, nodes); err != nil {
		return err
	}
	if lb == nil && o.subnetID == "" && o.networkID == "" && o.portID == "" {
		subnet, err := m.vipSubnet(ctx, o, nodes)
		if err != nil {
			return err
		}
		o.subnetID = subnet
	}
	if !o.internal && o.floatingNetworkID == "" {
		net, err := m.detectFloatingNetwork(ctx)
		if err != nil {
			return err
		}
		o.floatingNetworkID = net
	}
	if lb == nil && !o.internal && o.loadBalancerIP != "" {
		// Before the create: a refused address must leave nothing behind.
		found, err := m.Neutron.FloatingIPs(ctx, "", o.loadBalancerIP)
		if err != nil {
			return fmt.Errorf("find floating IP %s (spec.loadBalancerIP): %w", o.loadBalancerIP, err)
		}
		for _, f := range found {
			if f.PortID != "" {
				return fmt.Errorf("spec.loadBalancerIP %s: %w %s", f.Address, ErrFloatingIPInUse, f.PortID)
			}
			if err := mayTake(svc, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// mayTake refuses a floating IP spec.loadBalancerIP names that was
// allocated for a Service of another namespace (Stackward's or the
// upstream CCM's, by its description) and kept: it is that namespace's to
// reuse, not any namespace's to take. An operator's reserved address is
// anyone's the operator hands it to.
func mayTake(svc *corev1.Service, f FloatingIP) error {
	if ref, ok := fipServiceOf(f.Description); ok && ref.Namespace != svc.Namespace {
		return fmt.Errorf("spec.loadBalancerIP %s: %w: it was allocated for Service %s and kept; nothing was changed",
			f.Address, ErrFloatingIPOfAnotherNamespace, ref)
	}
	return nil
}

func (m *Manager) detectNodeSubnet(ctx context.Context, nodes []*corev1.Node) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.nodeSubnet != "" {
		return m.nodeSubnet, nil
	}
	for _, n := range nodes {
		for _, v6 := range []bool{false, true} {
			ip := internalIP(n, v6)
			if ip == "" {
				continue
			}
			subnet, err := m.Neutron.SubnetOfAddress(ctx, ip)
			if err != nil {
				return "", fmt.Errorf("find the subnet of node %s (%s) for the VIP; or set subnet-id in [LoadBalancer]: %w", n.Name, ip, err)
			}
			m.nodeSubnet = subnet
			return subnet, nil
		}
	}
	return "", fmt.Errorf("no subnet-id or network-id in [LoadBalancer] and no node with an InternalIP to find the nodes' subnet from")
}

func (m *Manager) detectFloatingNetwork(ctx context.Context) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.floatingNetwork != "" {
		return m.floatingNetwork, nil
	}
	nets, err := m.Neutron.ExternalNetworks(ctx)
	if err != nil {
		return "", fmt.Errorf("find the external network for floating IPs: %w", err)
	}
	switch len(nets) {
	case 0:
		// No external network: the load balancer is reachable on its VIP.
		return "", nil
	case 1:
		m.floatingNetwork = nets[0]
		klog.FromContext(ctx).Info("Using the only external network for load balancer floating IPs", "network", nets[0])
		return nets[0], nil
	}
	return "", fmt.Errorf("several external networks (%s): set floating-network-id in [LoadBalancer] or the annotation %s",
		strings.Join(nets, ", "), AnnotationFloatingNetworkID)
}

// ensureFloatingIP gives a public load balancer its floating IP, in this
// order: the one already on the VIP port (whatever its origin), the
// floating IP spec.loadBalancerIP names (attached, not taken over: it is
// the user's), or a new one, marked as ours.
func (m *Manager) ensureFloatingIP(ctx context.Context, id Identity, svc *corev1.Service, o *options, lb *LoadBalancer) ([]FloatingIP, error) {
	if o.internal || o.floatingNetworkID == "" {
		return nil, nil
	}
	fips, err := m.Neutron.FloatingIPs(ctx, lb.VIPPortID, "")
	if err != nil {
		return nil, fmt.Errorf("floating IPs of VIP port %s: %w", lb.VIPPortID, err)
	}
	if len(fips) > 1 {
		// Two syncs raced (a failover): keep one, release our extras.
		slices.SortFunc(fips, func(a, b FloatingIP) int { return strings.Compare(a.ID, b.ID) })
		kept := fips[:1]
		for _, f := range fips[1:] {
			if !createdByUs(f.Description, id.ClusterUID) {
				kept = append(kept, f)
				continue
			}
			if err := m.Neutron.DeleteFloatingIP(ctx, f.ID); err != nil {
				return nil, fmt.Errorf("release duplicate floating IP %s: %w", f.Address, err)
			}
		}
		fips = kept
	}
	if len(fips) > 0 {
		return fips, nil
	}
	if o.loadBalancerIP != "" {
		found, err := m.Neutron.FloatingIPs(ctx, "", o.loadBalancerIP)
		if err != nil {
			return nil, fmt.Errorf("find floating IP %s (spec.loadBalancerIP): %w", o.loadBalancerIP, err)
		}
		if len(found) > 0 {
			f := found[0]
			if f.PortID != "" && f.PortID != lb.VIPPortID {
				return nil, fmt.Errorf("spec.loadBalancerIP %s: %w %s", f.Address, ErrFloatingIPInUse, f.PortID)
			}
			if err := mayTake(svc, f); err != nil {
				return nil, err
			}
			if err := m.Neutron.AttachFloatingIP(ctx, f.ID, lb.VIPPortID); err != nil {
				return nil, fmt.Errorf("attach floating IP %s to VIP port %s: %w", f.Address, lb.VIPPortID, err)
			}
			f.PortID = lb.VIPPortID
			return []FloatingIP{f}, nil
		}
	}
	f, err := m.allocateFloatingIP(ctx, svc, o, FloatingIP{
		NetworkID:   o.floatingNetworkID,
		Address:     o.loadBalancerIP,
		PortID:      lb.VIPPortID,
		Description: FloatingIPDescription(id, refOf(svc)),
	})
	if err != nil {
		return nil, fmt.Errorf("create floating IP on network %s for VIP port %s: %w", o.floatingNetworkID, lb.VIPPortID, err)
	}
	klog.FromContext(ctx).Info("Allocated floating IP", "service", refOf(svc).String(), "ip", f.Address, "loadBalancer", lb.Name)
	return []FloatingIP{*f}, nil
}
