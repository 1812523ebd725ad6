package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"k8s.io/klog/v2"
)

// ovn-octavia-provider 3.0.0 (Zed) fails a listener create on a load
// balancer whose OVN Load_Balancer row of the listener's protocol has a
// health check: listener_create looks the health check up by the row's
// health_check column (a list of rows) instead of by its Octavia ID,
// raises RowNotFound after it has written the listener into OVN, and never
// reports a status. Octavia then keeps the load balancer PENDING_UPDATE
// and the listener PENDING_CREATE for good; only an operator's database
// edit frees them. Checked on the real services (e2e/realcloud): a TCP
// listener create beside a TCP monitor wedges; a UDP listener beside only
// TCP monitors, a pool create, a member create and a monitor create on a
// load balancer with several listeners do not. The provider keeps one OVN
// row per protocol, so only monitors on pools of the new listener's
// protocol are in the way.
//
// So on that provider, while a listener of protocol P is to be created,
// every monitor on a pool of protocol P goes first (one call each, as
// every change), the listeners are created, and the monitors come back
// last. A Service's own monitors come back through its own plan (the
// desired state wants them); those of other Services sharing the load
// balancer are remembered here with their settings and re-created by the
// Service that removed them. If the CCM restarts in between, the sync of
// every Service at start brings each one's monitors back.

// ReasonRecreatingMonitors: health monitors were removed for a listener
// create the OVN provider would otherwise wedge, and come back after it.
const ReasonRecreatingMonitors = "RecreatingHealthMonitors"

// removedMonitors are other Services' monitors a sync removed, by load
// balancer ID, then pool ID.
type removedMonitors struct {
	mu   sync.Mutex
	byLB map[string]map[string]MonitorSpec
}

func (r *removedMonitors) put(lbID, poolID string, m MonitorSpec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byLB == nil {
		r.byLB = map[string]map[string]MonitorSpec{}
	}
	if r.byLB[lbID] == nil {
		r.byLB[lbID] = map[string]MonitorSpec{}
	}
	r.byLB[lbID][poolID] = m
}

func (r *removedMonitors) drop(lbID, poolID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byLB[lbID], poolID)
	if len(r.byLB[lbID]) == 0 {
		delete(r.byLB, lbID)
	}
}

func (r *removedMonitors) of(lbID string) map[string]MonitorSpec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.byLB[lbID])
}

// monitorGuarded says whether a step that removes monitors for a listener
// create is first in steps: its sync then ends with ReasonRecreatingMonitors.
func monitorGuarded(steps []step) bool {
	return len(steps) > 0 && steps[0].clears != ""
}

// guardMonitors orders the plan steps of a Service on a load balancer of
// provider around the OVN provider's bug (see above): own is the Service's
// part of the load balancer (ownPart: its listeners, and every pool of the
// load balancer). Other providers' plans are returned as they are.
func (m *Manager) guardMonitors(lbID, provider string, own *Tree, steps []step) ([]step, error) {
	if !isOVN(provider) {
		return steps, nil
	}
	for _, s := range steps {
		if p := own.Pools[s.unmonitors]; p != nil && p.Monitor != nil {
			if first := firstPool(own, p.Protocol); first != p.ID {
				return nil, fmt.Errorf("%w: health monitor %s (%s) of pool %s cannot be deleted: the provider then reports pool %s ACTIVE instead of %s, which stays PENDING_UPDATE for good; nothing was changed. "+
					"Keep the monitor, or create the Service again without it (a new load balancer)",
					ErrOVNMonitorWedge, p.Monitor.Name, p.Monitor.ID, p.ID, first, p.ID)
			}
		}
	}
	steps = append(steps, m.restoreSteps(lbID, own)...)
	creating := map[string]bool{}
	for _, s := range steps {
		if s.listener != "" {
			creating[s.listener] = true
		}
	}
	if len(creating) == 0 {
		return steps, nil
	}
	mine := map[string]bool{}
	for _, l := range own.Listeners {
		mine[l.DefaultPoolID] = true
	}
	var out, last []step
	for _, id := range slices.Sorted(maps.Keys(own.Pools)) {
		p := own.Pools[id]
		if p.Monitor == nil || !creating[p.Protocol] {
			continue
		}
		mon, foreign := *p.Monitor, !mine[id]
		if first := firstPool(own, p.Protocol); first != id {
			return nil, fmt.Errorf("%w: a %s listener cannot be created beside health monitor %s (%s) of pool %s, and that monitor cannot be deleted either: "+
				"the provider then reports pool %s ACTIVE instead of %s, which stays PENDING_UPDATE for good; nothing was changed. "+
				"Create the Service with all its ports at once (a new load balancer), or give the new port a load balancer of its own",
				ErrOVNMonitorWedge, p.Protocol, mon.Name, mon.ID, id, first, id)
		}
		out = append(out, step{What: fmt.Sprintf("delete health monitor %s (%s) of pool %s before a %s listener is created", mon.Name, mon.ID, id, p.Protocol),
			do: func(ctx context.Context, o Octavia) error {
				if foreign {
					// Remembered before the call: a lost answer must not
					// lose the settings; a failed delete leaves the monitor,
					// which restoreSteps then finds and forgets.
					m.removed.put(lbID, id, mon.MonitorSpec)
				}
				return o.DeleteMonitor(ctx, mon.ID)
			}, clears: p.Protocol})
	}
	for _, s := range steps {
		if s.monitor != "" && creating[s.monitor] {
			last = append(last, s) // after the listener creates
			continue
		}
		out = append(out, s)
	}
	return append(out, last...), nil
}

// ErrOVNMonitorWedge: a listener create is refused because neither it nor
// removing the monitors in its way can be done on the OVN provider without
// wedging part of the load balancer.
var ErrOVNMonitorWedge = errors.New("Octavia's OVN provider (ovn-octavia-provider 3.0.0) would wedge the load balancer")

// firstPool is the pool of protocol the OVN provider reports ACTIVE after
// any monitor delete on that protocol: its hm_delete takes the first
// "pool_<id>" key of the protocol's OVN load balancer, in key order,
// whatever the monitor's pool (seen on the real services: a monitor
// delete on another pool left that pool PENDING_UPDATE for good).
func firstPool(tree *Tree, protocol string) string {
	first := ""
	for id, p := range tree.Pools {
		if p.Protocol == protocol && (first == "" || id < first) {
			first = id
		}
	}
	return first
}

// restoreSteps re-create the monitors of other Services this process
// removed from the load balancer, with the settings they had. A pool that
// is gone or has a monitor again (its Service re-created it) is forgotten.
func (m *Manager) restoreSteps(lbID string, tree *Tree) []step {
	var out []step
	removed := m.removed.of(lbID)
	for _, id := range slices.Sorted(maps.Keys(removed)) {
		p, ok := tree.Pools[id]
		if !ok || p.Monitor != nil {
			m.removed.drop(lbID, id)
			continue
		}
		spec := removed[id]
		out = append(out, step{What: fmt.Sprintf("re-create health monitor %s of another Service's pool %s", spec.Name, id),
			do: func(ctx context.Context, o Octavia) error {
				if err := o.CreateMonitor(ctx, id, spec); err != nil {
					return err
				}
				m.removed.drop(lbID, id)
				return nil
			}, monitor: p.Protocol})
	}
	return out
}

// monitorsRemoved is the in-progress answer of a sync that removed a
// monitor for a listener create; the service controller shows it as a
// Normal Event with reason ReasonRecreatingMonitors.
func (m *Manager) monitorsRemoved(ctx context.Context, lb *LoadBalancer, s step, queued int) error {
	klog.FromContext(ctx).Info("Removed a health monitor before a listener create: the OVN provider wedges the load balancer otherwise; it is re-created after the listener",
		"loadBalancer", lb.Name, "id", lb.ID, "step", s.What, "protocol", s.clears, "queued", queued)
	return notReady(m.requeue(), ReasonRecreatingMonitors,
		"load balancer %s (%s): %s; it is re-created after the listener: Octavia's OVN provider (ovn-octavia-provider 3.0.0) leaves a load balancer PENDING_UPDATE for good when a listener is created beside a health monitor of its protocol; %d more changes queued",
		lb.Name, lb.ID, s.What, queued)
}
