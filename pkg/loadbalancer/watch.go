package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/openstack"
)

// Octavia takes from a fraction of a second to minutes to apply a change,
// and a sync never waits for it: it returns a RetryError and the service
// controller brings the Service back later. How soon decides how fast a
// Service gets its address; what each return costs decides the cloud
// calls. The busy watch makes returns soon and cheap:
//
//   - a Service that alone waits for Octavia waits inside its sync, up to
//     SyncWait (2 s), looking after 50 ms and then twice as late each time
//     (settledInSync): on a quick Octavia it goes through its steps in one
//     sync, and the service controller records one sync, not one per look;
//   - otherwise, and after that, a Service whose load balancer is busy
//     comes back soon and then less often (recheckAfter): a quarter of a
//     second at first, a third of the time it has waited so far later,
//     never more than the Manager's requeue. It holds no worker while
//     Octavia works, so many Services waiting together do not queue
//     behind each other;
//   - while it waits, its sync reads the load balancer's state from one
//     view of this cluster's load balancers, shared by every waiting
//     Service and refreshed by one list call (plus a read of each waited
//     load balancer the list cannot show: one the Service shares but this
//     cluster did not make), so Services waiting together cost one call
//     per recheck, not one each;
//   - once the view shows the load balancer settled (or gone, or the view
//     cannot be read) the sync runs whole, as it did before;
//   - a load balancer PENDING_* for longer than StuckAfter (by Octavia's
//     own updated_at, so a restart does not reset it) is stuck: Octavia
//     stopped applying the change, typically an octavia-worker that died
//     mid-flow. The Service's sync says so in one Warning Event
//     (LoadBalancerStuck, whose repeats fold into its count), looks again
//     every stuckRecheck, is counted in stackward_loadbalancers_stuck and
//     listed by `stackward doctor`. Nothing is created beside it: it holds
//     the Service's name and floating IP, and a second load balancer would
//     need a new address. Once an admin marks it ERROR the sync replaces it
//     (recreate.go, the floating IP kept); once it is ACTIVE it goes on.
//
// It only ever answers "still busy": every decision is the sync's.

const (
	// firstRecheck is the first wait after a change.
	firstRecheck = 250 * time.Millisecond
	// recheckShare is the part of the time waited so far the next wait
	// may be: a load balancer that took 3 s is seen settled by 4 s.
	recheckShare = 3 // 1/3
	// viewSlack is how old a view may be for a Service coming back: those
	// that come back together share one refresh.
	viewSlack = 100 * time.Millisecond
	// forgetWait drops a wait whose Service has not come back this long
	// (a Service deleted while it waited, then never synced).
	forgetWait = time.Hour
	// DefaultStuckAfter is how long a load balancer may stay PENDING_*
	// before it counts as stuck. Octavia's own flows give up sooner
	// (amphora builds time out in minutes and end in ERROR).
	DefaultStuckAfter = 15 * time.Minute
	// stuckRecheck is how often a stuck load balancer is looked at.
	stuckRecheck = 30 * time.Second
	// DefaultSyncWait bounds how long one sync of a Service that alone
	// waits for Octavia waits for it before it hands its worker back.
	DefaultSyncWait = 2 * time.Second
	// inSyncFirstLook is a sync's first look at the load balancer it
	// waits for; each next look is twice as late.
	inSyncFirstLook = 50 * time.Millisecond
	// othersWaiting: a wait due this recently counts as waiting.
	othersWaiting = 10 * time.Second
)

// busyWatch is the Manager's record of Services waiting for Octavia and
// its shared view of their load balancers.
type busyWatch struct {
	mu    sync.Mutex
	waits map[waitKey]*wait
	// view is what Octavia said of each watched load balancer when read
	// at readAt; a watched one absent from it is gone.
	view   map[string]observed
	readAt time.Time
	// refreshing is closed when the refresh in flight ends; nil: none.
	refreshing chan struct{}
}

// waitKey is a Service: its name, and its UID, which tells a Service made
// again under the same name from the one that waited.
type waitKey struct {
	ref ServiceRef
	uid types.UID
}

func waitKeyOf(svc *corev1.Service) waitKey { return waitKey{refOf(svc), svc.UID} }

// wait is one Service waiting for one load balancer: since when, when it
// last looked, when it is due back.
type wait struct {
	lbID, lbName, tag  string
	since, looked, due time.Time
}

// observed is a load balancer's provisioning status and the time it last
// changed by Octavia's clock (updated_at, or created_at before any update).
type observed struct {
	status  string
	changed time.Time
}

func observe(lb *LoadBalancer) observed {
	o := observed{status: lb.ProvisioningStatus, changed: lb.UpdatedAt}
	if o.changed.IsZero() {
		o.changed = lb.CreatedAt
	}
	return o
}

// pendingSince is when the load balancer became busy: Octavia's time of
// its last change, or when this process first saw it busy if that is
// earlier or Octavia gave none.
func pendingSince(cur *wait, obs observed) time.Time {
	if !obs.changed.IsZero() && obs.changed.Before(cur.since) {
		return obs.changed
	}
	return cur.since
}

// syncWait is SyncWait or its default; zero: never wait inside a sync.
func (m *Manager) syncWait() time.Duration {
	switch {
	case m.SyncWait < 0:
		return 0
	case m.SyncWait == 0:
		return DefaultSyncWait
	}
	return m.SyncWait
}

func (m *Manager) stuckAfter() time.Duration {
	if m.StuckAfter > 0 {
		return m.StuckAfter
	}
	return DefaultStuckAfter
}

// recheckAfter is how long a Service that has waited waited so far sleeps
// before its next look, at most limit.
func recheckAfter(waited, limit time.Duration) time.Duration {
	d := max(waited/recheckShare, firstRecheck)
	return min(d, limit)
}

// waitFor records that svc waits for lb to settle and returns the
// RetryError that brings it back: soon after a change, less often the
// longer it waits. The message stays the same while the Service waits for
// the same load balancer in the same state, so its Events fold into one.
func (m *Manager) waitFor(svc *corev1.Service, id Identity, lb *LoadBalancer, reason, format string, args ...any) error {
	now := time.Now()
	w := &m.busy
	w.mu.Lock()
	if w.waits == nil {
		w.waits = map[waitKey]*wait{}
	}
	cur := w.waits[waitKeyOf(svc)]
	if cur == nil || cur.lbID != lb.ID {
		cur = &wait{lbID: lb.ID, lbName: lb.Name, since: now}
		w.waits[waitKeyOf(svc)] = cur
	}
	cur.tag = ClusterTag(id.ClusterUID)
	d := recheckAfter(now.Sub(cur.since), m.requeue())
	cur.looked, cur.due = now, now.Add(d)
	for k, o := range w.waits {
		if now.Sub(o.due) > forgetWait {
			delete(w.waits, k)
		}
	}
	w.mu.Unlock()
	return waiting(d, reason, format, args...)
}

// stillBusy answers a Service that waits for its load balancer from the
// shared view: a RetryError while the view shows it busy, nil (the sync
// runs whole) once it settled, is gone, or the view cannot be read.
func (m *Manager) stillBusy(ctx context.Context, svc *corev1.Service) error {
	w := &m.busy
	w.mu.Lock()
	cur := w.waits[waitKeyOf(svc)]
	w.mu.Unlock()
	if cur == nil {
		return nil
	}
	obs, err := m.busyStatus(ctx, cur)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Reading busy load balancers failed; syncing in full", "service", refOf(svc).String(), "err", err)
	}
	if err != nil || !pending(obs.status) {
		w.mu.Lock()
		if w.waits[waitKeyOf(svc)] == cur {
			delete(w.waits, waitKeyOf(svc))
		}
		w.mu.Unlock()
		return nil
	}
	if since := pendingSince(cur, obs); time.Since(since) >= m.stuckAfter() {
		return m.stuck(cur, obs.status, since)
	}
	id := Identity{ClusterUID: strings.TrimPrefix(cur.tag, clusterUIDTagPrefix)}
	lb := &LoadBalancer{ID: cur.lbID, Name: cur.lbName}
	return m.waitFor(svc, id, lb, ReasonWaitingForOctavia, "load balancer %s (%s) is %s", cur.lbName, cur.lbID, obs.status)
}

// stuck is the answer for a load balancer busy for longer than
// StuckAfter: a Warning naming it, since when, and what unblocks it; the
// Service is looked at again every stuckRecheck.
func (m *Manager) stuck(cur *wait, status string, since time.Time) error {
	d := max(stuckRecheck, m.requeue())
	m.busy.mu.Lock()
	cur.due = time.Now().Add(d)
	m.busy.mu.Unlock()
	return stuckError(d, "load balancer %s (%s) has been %s since %s (over %s): Octavia is not finishing the change, "+
		"typically because an octavia-worker stopped in the middle of it; Stackward changes nothing while it holds the Service's name and floating IP. "+
		"An OpenStack admin can restart octavia-worker, or mark the load balancer ERROR in Octavia's database "+
		"(Stackward then replaces it and keeps the floating IP); it goes on by itself once the load balancer is ACTIVE",
		cur.lbName, cur.lbID, status, since.UTC().Format(time.RFC3339), m.stuckAfter())
}

// StuckLoadBalancer is a load balancer a Service waits for that has been
// busy for longer than StuckAfter.
type StuckLoadBalancer struct {
	ID, Name, Status string
	Since            time.Time
}

// Stuck lists the load balancers Services wait for that are stuck, as
// the last view saw them (the stackward_loadbalancers_stuck metric).
func (m *Manager) Stuck() []StuckLoadBalancer {
	w := &m.busy
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[string]bool{}
	var out []StuckLoadBalancer
	for _, cur := range w.waits {
		obs, ok := w.view[cur.lbID]
		if !ok || seen[cur.lbID] || !pending(obs.status) {
			continue
		}
		if since := pendingSince(cur, obs); time.Since(since) >= m.stuckAfter() {
			seen[cur.lbID] = true
			out = append(out, StuckLoadBalancer{ID: cur.lbID, Name: cur.lbName, Status: obs.status, Since: since})
		}
	}
	return out
}

// pending says whether a provisioning status is a change in progress that
// a sync must wait for. PENDING_DELETE is not: for a sync the load
// balancer is gone.
func pending(status string) bool {
	return strings.HasPrefix(status, "PENDING_") && status != StatusPendingDelete
}

// forget drops the Service's wait (its load balancer is deleted).
func (m *Manager) forget(svc *corev1.Service) {
	m.busy.mu.Lock()
	delete(m.busy.waits, waitKeyOf(svc))
	m.busy.mu.Unlock()
}

// busyStatus is what a view read at most viewSlack ago, and since the
// Service last looked, says of cur's load balancer (zero: gone): Services
// that come back together share it, and none is answered twice from one
// reading.
func (m *Manager) busyStatus(ctx context.Context, cur *wait) (observed, error) {
	m.busy.mu.Lock()
	need := cur.looked
	m.busy.mu.Unlock()
	if recent := time.Now().Add(-viewSlack); need.Before(recent) {
		need = recent
	}
	return m.viewFrom(ctx, need, cur.lbID)
}

// viewFrom is what a view read at or after need says of the load balancer
// lbID; it refreshes the view when it is older, one refresh at a time,
// the others waiting for it.
func (m *Manager) viewFrom(ctx context.Context, need time.Time, lbID string) (observed, error) {
	w := &m.busy
	for {
		w.mu.Lock()
		if !w.readAt.Before(need) {
			obs := w.view[lbID] // none: gone, or not watched when read
			w.mu.Unlock()
			return obs, nil
		}
		if ch := w.refreshing; ch != nil {
			w.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return observed{}, ctx.Err()
			}
		}
		ch := make(chan struct{})
		w.refreshing = ch
		watched := map[string]string{} // load balancer ID → its cluster tag
		for _, o := range w.waits {
			watched[o.lbID] = o.tag
		}
		w.mu.Unlock()

		start := time.Now()
		view, err := m.readBusy(ctx, watched)
		w.mu.Lock()
		if err == nil {
			w.view, w.readAt = view, start
		}
		w.refreshing = nil
		close(ch)
		w.mu.Unlock()
		if err != nil {
			return observed{}, err
		}
	}
}

// settledInSync waits inside the sync for the load balancer the Service
// was just told to wait for (err), if no other Service waits for Octavia:
// a Service alone comes through its steps in one sync when Octavia is
// quick, with one service-controller sync (and its Events) per sync rather
// than one per look. It looks through the shared view after
// inSyncFirstLook, then twice as late each time, until deadline. It
// reports true once the load balancer settled (the sync goes on), false
// when the deadline comes first, another Service starts waiting, or the
// view cannot be read (the RetryError stands).
func (m *Manager) settledInSync(ctx context.Context, svc *corev1.Service, err error, deadline time.Time) bool {
	if r := ProgressReason(errString(err)); r != ReasonWaitingForOctavia && r != ReasonApplyingChanges {
		return false
	}
	w := &m.busy
	key := waitKeyOf(svc)
	for look := inSyncFirstLook; ; look *= 2 {
		w.mu.Lock()
		cur, alone := w.waits[key], w.alone(key)
		w.mu.Unlock()
		at := time.Now().Add(look)
		if cur == nil || !alone || at.After(deadline) {
			return false
		}
		select {
		case <-time.After(look):
		case <-ctx.Done():
			return false
		}
		obs, err := m.viewFrom(ctx, at, cur.lbID)
		if err != nil {
			return false
		}
		if !pending(obs.status) {
			w.mu.Lock()
			if w.waits[key] == cur {
				delete(w.waits, key)
			}
			w.mu.Unlock()
			return true
		}
	}
}

// alone says whether no Service but key's waits for Octavia now (a wait
// due in the last othersWaiting counts: its Service is on its way back).
// The caller holds w.mu.
func (w *busyWatch) alone(key waitKey) bool {
	recent := time.Now().Add(-othersWaiting)
	for k, o := range w.waits {
		if k != key && o.due.After(recent) {
			return false
		}
	}
	return true
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// readBusy reads the statuses of the watched load balancers: one list of
// each cluster tag's load balancers, and one read of each watched one the
// lists do not show (a shared load balancer this cluster did not make).
func (m *Manager) readBusy(ctx context.Context, watched map[string]string) (map[string]observed, error) {
	view := map[string]observed{}
	listed := map[string]bool{}
	for _, tag := range watched {
		if listed[tag] {
			continue
		}
		listed[tag] = true
		lbs, err := m.Octavia.ListLoadBalancers(ctx, tag)
		if err != nil {
			return nil, fmt.Errorf("list load balancers tagged %s: %w", tag, err)
		}
		for _, lb := range lbs {
			if _, ok := watched[lb.ID]; ok {
				view[lb.ID] = observe(&lb)
			}
		}
	}
	for lbID := range watched {
		if _, ok := view[lbID]; ok {
			continue
		}
		lb, err := m.Octavia.GetLoadBalancer(ctx, lbID)
		switch {
		case errors.Is(err, openstack.ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("read load balancer %s: %w", lbID, err)
		default:
			view[lbID] = observe(lb)
		}
	}
	return view, nil
}

// watchBusy turns a sync's "Octavia is busy" or "more changes queued" on
// lb into a wait on it: the next looks are soon and shared. Other errors
// pass as they are.
func (m *Manager) watchBusy(svc *corev1.Service, id Identity, lb *LoadBalancer, err error) error {
	var re *api.RetryError
	if err == nil || lb == nil || !errors.As(err, &re) {
		return err
	}
	msg := err.Error()
	reason := ProgressReason(msg)
	if reason != ReasonWaitingForOctavia && reason != ReasonApplyingChanges {
		return err
	}
	text := msg[:strings.LastIndex(msg, progressMarker)]
	return m.waitFor(svc, id, lb, reason, "%s", text)
}
