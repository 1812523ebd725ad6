package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/openstack"
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
// desired state wants them). Any other monitor (another Service's, or one
// on a load balancer made outside Kubernetes) is first recorded with its
// settings in a tag on its pool (removedMonitorTag, one call, and no
// delete unless it was written), then deleted. Every sync of any Service
// on that load balancer, by any Stackward process, reads those tags with
// the tree (no extra call), re-creates the monitors they record once no
// listener create of their protocol is pending, and then removes the
// tags. A process that restarts in between loses nothing.
//
// A listener create that fails leaves the load balancer as it was, so the
// monitors removed for it come back at once: the first in the same sync
// (one more call, before the controller's back-off), the others first
// thing in the next syncs (failedCreates), and the next attempt removes
// them again. The load balancer is without them only between a delete and
// the create.

// ReasonRecreatingMonitors: health monitors were removed for a listener
// create the OVN provider would otherwise wedge, and come back after it.
const ReasonRecreatingMonitors = "RecreatingHealthMonitors"

// failedCreates are, by load balancer ID, the protocols whose listener
// create failed after monitors were removed for it: until those monitors
// are back they are re-created before anything else. Only a hint: a
// restart loses it at the cost of one more failed create.
type failedCreates struct {
	mu   sync.Mutex
	byLB map[string]map[string]bool
}

func (f *failedCreates) set(lbID, protocol string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byLB == nil {
		f.byLB = map[string]map[string]bool{}
	}
	if f.byLB[lbID] == nil {
		f.byLB[lbID] = map[string]bool{}
	}
	f.byLB[lbID][protocol] = true
}

func (f *failedCreates) has(lbID, protocol string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byLB[lbID][protocol]
}

func (f *failedCreates) clear(lbID, protocol string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.byLB[lbID], protocol)
	if len(f.byLB[lbID]) == 0 {
		delete(f.byLB, lbID)
	}
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
	creating := map[string]bool{}
	for _, s := range steps {
		if s.listener != "" {
			creating[s.listener] = true
		}
	}
	mine := map[string]bool{}
	for _, l := range own.Listeners {
		mine[l.DefaultPoolID] = true
	}
	restores, untags := restoreSteps(own, mine, creating)
	steps = append(steps, restores...)
	// back are, by protocol, the monitor creates on pools that exist and
	// have none: what a failed listener create of that protocol brings
	// back at once.
	back := map[string][]step{}
	for _, s := range steps {
		if p := own.Pools[s.pool]; s.monitor != "" && p != nil && p.Monitor == nil && creating[s.monitor] {
			back[s.monitor] = append(back[s.monitor], s)
		}
	}
	retrying := map[string]bool{}
	for _, protocol := range slices.Sorted(maps.Keys(creating)) {
		if !m.failedCreates.has(lbID, protocol) {
			continue
		}
		if len(back[protocol]) == 0 {
			m.failedCreates.clear(lbID, protocol) // all back: the next attempt may remove them again
			continue
		}
		retrying[protocol] = true
	}
	var again, out, middle, last []step
	for _, id := range slices.Sorted(maps.Keys(own.Pools)) {
		p := own.Pools[id]
		if p.Monitor == nil || !creating[p.Protocol] || retrying[p.Protocol] {
			continue
		}
		mon := *p.Monitor
		if first := firstPool(own, p.Protocol); first != id {
			return nil, fmt.Errorf("%w: a %s listener cannot be created beside health monitor %s (%s) of pool %s, and that monitor cannot be deleted either: "+
				"the provider then reports pool %s ACTIVE instead of %s, which stays PENDING_UPDATE for good; nothing was changed. "+
				"Create the Service with all its ports at once (a new load balancer), or give the new port a load balancer of its own",
				ErrOVNMonitorWedge, p.Protocol, mon.Name, mon.ID, id, first, id)
		}
		if !mine[id] {
			record, err := recordStep(id, p)
			if err != nil {
				return nil, fmt.Errorf("%w: a %s listener cannot be created beside health monitor %s (%s) of pool %s, which cannot be removed and re-created: %w; nothing was changed",
					ErrOVNMonitorWedge, p.Protocol, mon.Name, mon.ID, id, err)
			}
			if record != nil {
				out = append(out, *record)
			}
		}
		out = append(out, step{What: fmt.Sprintf("delete health monitor %s (%s) of pool %s before a %s listener is created", mon.Name, mon.ID, id, p.Protocol),
			do: func(ctx context.Context, o Octavia) error {
				return o.DeleteMonitor(ctx, mon.ID)
			}, clears: p.Protocol})
	}
	for _, s := range steps {
		switch {
		case retrying[s.monitor] && slices.ContainsFunc(back[s.monitor], func(b step) bool { return b.What == s.What }):
			again = append(again, s) // before anything else
		case s.monitor != "" && creating[s.monitor]:
			last = append(last, s) // after the listener creates
		case s.listener != "" && len(back[s.listener]) > 0:
			middle = append(middle, m.restoreOnFailure(lbID, s, back[s.listener][0]))
		default:
			middle = append(middle, s)
		}
	}
	return slices.Concat(again, out, middle, last, untags), nil
}

// restoreOnFailure wraps a listener create so that, when it fails, the
// first monitor removed for it comes back in the same sync: a refused
// create changed nothing, so the load balancer takes one more change. The
// failure is what the sync reports; the monitor create's own failure is
// only told (a busy answer to it must not make the sync look merely busy).
func (m *Manager) restoreOnFailure(lbID string, create, monitor step) step {
	do := create.do
	create.do = func(ctx context.Context, o Octavia) error {
		err := do(ctx, o)
		if err == nil || openstack.IsBusy(err) {
			return err
		}
		m.failedCreates.set(lbID, create.listener)
		if merr := monitor.do(ctx, o); merr != nil {
			// merr is context, not cause: wrapped, errors.Is would find (say) a
			// 404 of the monitor and take the failed create for "not found".
			return fmt.Errorf("%w; the health monitors removed for it come back on the next syncs (%s: %v)", err, monitor.What, merr) //nolint:errorlint // see above
		}
		return fmt.Errorf("%w; the health monitors removed for it come back meanwhile (%s: done)", err, monitor.What)
	}
	return create
}

// recordStep writes a monitor's settings in a tag on its pool before the
// monitor is deleted, or is nil when that tag is there already.
func recordStep(poolID string, p *Pool) (*step, error) {
	tag, err := removedMonitorTag(p.Monitor.MonitorSpec)
	if err != nil {
		return nil, err
	}
	old, _, _ := removedMonitorOf(p.Tags)
	if old == tag {
		return nil, nil
	}
	tags := append(slices.DeleteFunc(slices.Clone(p.Tags), func(t string) bool { return t == old }), tag)
	return &step{What: fmt.Sprintf("record the settings of health monitor %s (%s) in a tag of pool %s before it is deleted", p.Monitor.Name, p.Monitor.ID, poolID),
		do: func(ctx context.Context, o Octavia) error {
			return o.SetPoolTags(ctx, poolID, tags)
		}}, nil
}

// restoreSteps re-create the monitors recorded in pool tags (recordStep)
// whose pools have none, with the recorded settings; untags remove the
// tags that have done their job: the monitor is back and no listener
// create has it removed, or the pool is the Service's own (its desired
// state decides its monitor). Only Stackward's tag and the monitor it
// removed are touched.
func restoreSteps(tree *Tree, mine, creating map[string]bool) (restores, untags []step) {
	for _, id := range slices.Sorted(maps.Keys(tree.Pools)) {
		p := tree.Pools[id]
		tag, spec, ok := removedMonitorOf(p.Tags)
		switch {
		case !ok:
		case mine[id] || p.Monitor != nil && !creating[p.Protocol]:
			tags := slices.DeleteFunc(slices.Clone(p.Tags), func(t string) bool { return t == tag })
			untags = append(untags, step{What: fmt.Sprintf("remove the tag that recorded health monitor %s from pool %s", spec.Name, id),
				do: func(ctx context.Context, o Octavia) error {
					return o.SetPoolTags(ctx, id, tags)
				}})
		case p.Monitor == nil:
			restores = append(restores, step{What: fmt.Sprintf("re-create health monitor %s of pool %s from its tag", spec.Name, id),
				do: func(ctx context.Context, o Octavia) error {
					return o.CreateMonitor(ctx, id, spec)
				}, monitor: p.Protocol, pool: id, leaves: 1})
		}
	}
	return restores, untags
}

// ErrOVNMonitorWedge: a listener create is refused because neither it nor
// removing the monitors in its way can be done on the OVN provider without
// wedging part of the load balancer.
var ErrOVNMonitorWedge = errors.New("Octavia's OVN provider (ovn-octavia-provider 3.0.0) would wedge the load balancer") //nolint:staticcheck // ST1005: "Octavia" is a name

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
