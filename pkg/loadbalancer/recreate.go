package loadbalancer

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/openstack"
)

// A load balancer Octavia left in provisioning status ERROR cannot be
// changed any more (every update is refused) and does not heal: the only
// way out is a new one. It is replaced keeping its floating IPs, so the
// Service's address does not change:
//
//  1. the new load balancer is created in one fully populated call while
//     the broken one still holds the floating IPs;
//  2. each floating IP is re-pointed from the old VIP port to the new one
//     (one Neutron update each; the address never returns to the pool);
//  3. the broken load balancer is deleted with its children (cascade).
//
// Every step is safe to repeat. If the sync stops after 1, the next one
// finds two load balancers and keeps the working one (find), retiring the
// broken one through steps 2 and 3. A VIP that is pinned (spec.loadBalancerIP
// of an internal load balancer, or loadbalancer.openstack.org/port-id) is
// held by the broken load balancer until it is gone, so that one is deleted
// first and created again on a later sync.

// recreate replaces old, which is broken (why: "in provisioning status
// ERROR", say), by a new load balancer built from spec. It always returns
// an error: a RetryError saying what it did (the service controller shows
// it as an Event on the Service) or the failure.
func (m *Manager) recreate(ctx context.Context, old *LoadBalancer, spec Spec, why string) error {
	logger := klog.FromContext(ctx).WithValues("loadBalancer", spec.Name, "id", old.ID)
	if spec.VIPSubnetID == "" && spec.VIPNetworkID == "" && spec.VIPPortID == "" {
		// Nothing configured: the VIP goes where the broken one's was.
		spec.VIPSubnetID = old.VIPSubnetID
	}
	if spec.VIPAddress != "" || spec.VIPPortID != "" {
		if err := m.deleteBroken(ctx, old); err != nil {
			return err
		}
		logger.Info("Deleted a broken load balancer; it is created again once Octavia has removed it", "broken", why)
		return notReady(m.requeue(), ReasonRecreating, "load balancer %s (%s) was %s: deleted it, it is created again with the same VIP once Octavia has removed it",
			spec.Name, old.ID, why)
	}
	fresh, err := m.Octavia.CreateLoadBalancer(ctx, createSpec(spec))
	if err != nil {
		return fmt.Errorf("load balancer %s (%s) is %s; creating its replacement: %w", spec.Name, old.ID, why, err)
	}
	moved, err := m.retire(ctx, old, fresh)
	if err != nil {
		return fmt.Errorf("load balancer %s: replacing %s (%s) by %s: %w", spec.Name, old.ID, why, fresh.ID, err)
	}
	logger.Info("Recreated a broken load balancer", "broken", why, "new", fresh.ID, "floatingIPs", addresses(moved))
	kept := ""
	if len(moved) > 0 {
		kept = ", keeping floating IP " + strings.Join(addresses(moved), ", ")
	}
	return notReady(m.requeue(), ReasonRecreating, "load balancer %s (%s) was %s: recreated it as %s%s", spec.Name, old.ID, why, fresh.ID, kept)
}

// retire moves the floating IPs of old (in ERROR) to keeper's VIP port and
// deletes old with its children. It returns the floating IPs it moved.
func (m *Manager) retire(ctx context.Context, old, keeper *LoadBalancer) ([]FloatingIP, error) {
	fips, err := m.Neutron.FloatingIPs(ctx, old.VIPPortID, "")
	if err != nil {
		return nil, fmt.Errorf("floating IPs of VIP port %s: %w", old.VIPPortID, err)
	}
	for _, f := range fips {
		if err := m.Neutron.AttachFloatingIP(ctx, f.ID, keeper.VIPPortID); err != nil {
			return nil, fmt.Errorf("move floating IP %s to VIP port %s: %w", f.Address, keeper.VIPPortID, err)
		}
	}
	return fips, m.deleteBroken(ctx, old)
}

// retireDuplicate is retire for a load balancer in ERROR that find meets
// next to a working one: a replacement whose floating IPs did not move yet.
// When the working one has a floating IP already, the broken one's are
// released as any duplicate's are (deleteLB).
func (m *Manager) retireDuplicate(ctx context.Context, id Identity, svc ServiceRef, old, keeper *LoadBalancer, keep func(FloatingIP) bool) error {
	have, err := m.Neutron.FloatingIPs(ctx, keeper.VIPPortID, "")
	if err != nil {
		return fmt.Errorf("floating IPs of VIP port %s: %w", keeper.VIPPortID, err)
	}
	if len(have) > 0 {
		return m.deleteLB(ctx, id, old, keep)
	}
	moved, err := m.retire(ctx, old, keeper)
	if err == nil {
		klog.FromContext(ctx).Info("Retired a load balancer in provisioning status ERROR", "service", svc.String(), "id", old.ID, "kept", keeper.ID, "floatingIPs", addresses(moved))
	}
	return err
}

func (m *Manager) deleteBroken(ctx context.Context, lb *LoadBalancer) error {
	if err := m.Octavia.DeleteLoadBalancer(ctx, lb.ID); err != nil {
		if openstack.IsBusy(err) {
			return notReady(m.requeue(), ReasonWaitingForOctavia, "load balancer %s (%s) in ERROR became busy; deleting it when it settles", lb.Name, lb.ID)
		}
		return fmt.Errorf("delete load balancer %s (%s) in provisioning status ERROR: %w", lb.Name, lb.ID, err)
	}
	m.accepted(lb) // an admin's ERROR ends a refusal (stranded children) too
	m.unstrand(lb)
	return nil
}

func addresses(fips []FloatingIP) []string {
	out := make([]string, 0, len(fips))
	for _, f := range fips {
		out = append(out, f.Address)
	}
	return out
}
