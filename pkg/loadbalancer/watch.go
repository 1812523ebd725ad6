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
// and a sync never waits long for it: it returns a RetryError and the
// service controller brings the Service back later. How soon decides how fast a
// Service gets its address; what each return costs decides the cloud
// calls. The busy watch makes returns soon and cheap:
//
//   - each kind of change (provider and PENDING_* state) is timed: the
//     next wait for one looks just before it should be done, then every
//     tenth of its time, and only then less often (nextLook);
//   - a quick kind (half a second at most) is waited for inside the sync
//     (settledInSync): on a quick Octavia a
//     Service goes through its steps in one sync, and the service
//     controller records one sync, not one per look. A slow Octavia never
//     holds a worker, so Services created together do not queue behind
//     each other's waits;
//   - knowing nothing yet, a Service comes back soon and then less often
//     (recheckAfter): a quarter of a second at first, a third of the time
//     it has waited so far later, never more than the Manager's requeue;
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
	// DefaultSyncWait bounds how long one sync waits for Octavia inside
	// the call before it hands its worker back.
	DefaultSyncWait = 2 * time.Second
	// quickSettle: a kind of change that lately took this long at most is
	// waited for inside the sync.
	quickSettle = 500 * time.Millisecond
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
	// settle is how long each kind of change took lately (a moving
	// average): the next wait for one looks when it should be done.
	settle map[string]time.Duration
	// refused is, per load balancer, since when Octavia has answered its
	// changes with 409 without one accepted since (refusedBy).
	refused map[string]refusal
	// stranded is, per load balancer, when it was first seen stranded by
	// its create (stranded.go).
	stranded map[string]time.Time
	// strandedBy is, per Octavia provider, when one of its fully
	// populated creates was last replaced as stranded.
	strandedBy map[string]time.Time
}

// refusal is a load balancer whose changes Octavia keeps refusing.
type refusal struct {
	name  string
	since time.Time
}

// conflict is the RetryError of a change Octavia refused with 409: the
// shared view does not wait on it (the load balancer may well be ACTIVE,
// with a child PENDING_*), its delay grows on its own.
type conflict struct{ error }

func (c conflict) Unwrap() error { return c.error }

// refusedBy answers a change Octavia refused with 409 on lb: busy, looked
// at again after recheckAfter of the time its changes have been refused,
// and stuck (LoadBalancerStuck) once that is longer than StuckAfter. A
// load balancer ACTIVE with a listener, pool or member Octavia left
// PENDING_* (a worker gone mid-flow: seen on the real services) refuses
// every change under it for good; without this a Service tried again four
// times a second without a word.
func (m *Manager) refusedBy(lb *LoadBalancer, what string) error {
	w := &m.busy
	w.mu.Lock()
	if w.refused == nil {
		w.refused = map[string]refusal{}
	}
	r, ok := w.refused[lb.ID]
	if !ok {
		r = refusal{name: lb.Name, since: time.Now()}
		w.refused[lb.ID] = r
	}
	w.mu.Unlock()
	refusedFor := time.Since(r.since)
	if refusedFor >= m.stuckAfter() {
		d := max(stuckRecheck, m.requeue())
		return conflict{stuckError(d, "load balancer %s (%s) has refused every change since %s (over %s; the last: %s): "+
			"a listener, pool or member under it is PENDING_* and Octavia is not finishing it, typically because an octavia-worker stopped in the middle of a change. "+
			"An OpenStack admin can restart octavia-worker, or mark the load balancer ERROR in Octavia's database (Stackward then replaces it and keeps the floating IP)",
			lb.Name, lb.ID, r.since.UTC().Format(time.RFC3339), m.stuckAfter(), what)}
	}
	d := recheckAfter(refusedFor, m.requeue())
	return conflict{notReady(d, ReasonWaitingForOctavia, "load balancer %s (%s): %s: Octavia says it is busy", lb.Name, lb.ID, what)}
}

// accepted ends lb's refusal: Octavia took a change, or the delete of
// the load balancer (it refuses nothing any more, and must not stay in
// Stuck and its metric).
func (m *Manager) accepted(lb *LoadBalancer) {
	m.busy.mu.Lock()
	delete(m.busy.refused, lb.ID)
	m.busy.mu.Unlock()
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
	lbID, lbName, tag string
	// kind is what is awaited, <provider>/<PENDING_* state>: the key of
	// the settle times learned (busyWatch.settle).
	kind               string
	since, looked, due time.Time
	// pendingSeen is when a reading last showed it busy.
	pendingSeen time.Time
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
// before its next look, at most limit, knowing nothing of how long such a
// change takes: soon, then a third of the wait so far.
func recheckAfter(waited, limit time.Duration) time.Duration {
	d := max(waited/recheckShare, firstRecheck)
	return min(d, limit)
}

// nextLook is recheckAfter for a change whose kind took about expect
// lately (0: unknown): the first look just before it should be done, then
// every tenth of it until half as long again, then as recheckAfter.
func nextLook(waited, expect, limit time.Duration) time.Duration {
	switch {
	case expect == 0 || waited >= expect*3/2:
		return recheckAfter(waited, limit)
	case waited < expect*9/10:
		return min(max(expect*9/10-waited, firstRecheck), limit)
	}
	return min(max(expect/10, firstRecheck), limit)
}

// learn records that a wait of kind took about took: a moving average
// that follows a cloud slowing down or speeding up within a few waits.
// The caller holds w.mu.
func (w *busyWatch) learn(kind string, took time.Duration) {
	if w.settle == nil {
		w.settle = map[string]time.Duration{}
	}
	if old, ok := w.settle[kind]; ok {
		took = (old + took) / 2
	}
	w.settle[kind] = max(took, time.Millisecond)
}

// ended records the end of cur, seen settled at seen: when ACTIVE, it
// took about until the middle of the last busy reading and this one. The
// caller holds w.mu.
func (w *busyWatch) ended(cur *wait, status string, seen time.Time) {
	if status != StatusActive {
		return
	}
	last := cur.pendingSeen
	if last.Before(cur.since) {
		last = cur.since
	}
	w.learn(cur.kind, last.Add(seen.Sub(last)/2).Sub(cur.since))
}

// kindOf is what a wait for lb awaits: the state it is in, or the update
// a change just asked for.
func kindOf(lb *LoadBalancer) string {
	state := lb.ProvisioningStatus
	if !pending(state) {
		state = "PENDING_UPDATE"
	}
	return lb.Provider + "/" + state
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
		cur = &wait{lbID: lb.ID, lbName: lb.Name, kind: kindOf(lb), since: now}
		w.waits[waitKeyOf(svc)] = cur
	}
	cur.tag = ClusterTag(id.ClusterUID)
	d := nextLook(now.Sub(cur.since), w.settle[cur.kind], m.requeue())
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
			if err == nil {
				w.ended(cur, obs.status, time.Now())
			}
		}
		w.mu.Unlock()
		return nil
	}
	w.mu.Lock()
	cur.pendingSeen = time.Now()
	w.mu.Unlock()
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
	for id, r := range w.refused {
		if !seen[id] && time.Since(r.since) >= m.stuckAfter() {
			seen[id] = true
			out = append(out, StuckLoadBalancer{ID: id, Name: r.name, Status: "refusing changes", Since: r.since})
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
// was just told to wait for (err) when that should be quick: a change of a
// kind that lately took quickSettle at most. On a quick Octavia a Service
// then comes through its steps in one sync, with one service-controller
// sync (and its Events) rather than one per look; a slow Octavia, or one
// not timed yet, never holds a worker. It looks through the shared view
// when the change should be done, then twice as late each time, for four
// times as long as such a change takes at most, and until deadline. It
// reports true once the load balancer settled (the sync goes on), false
// when time is up or the view cannot be read (the RetryError stands).
func (m *Manager) settledInSync(ctx context.Context, svc *corev1.Service, err error, deadline time.Time) bool {
	if r := ProgressReason(errString(err)); (r != ReasonWaitingForOctavia && r != ReasonApplyingChanges) || errors.As(err, new(conflict)) {
		return false
	}
	w := &m.busy
	key := waitKeyOf(svc)
	w.mu.Lock()
	cur := w.waits[key]
	var expect time.Duration
	if cur != nil {
		expect = w.settle[cur.kind]
	}
	w.mu.Unlock()
	if cur == nil || expect == 0 || expect > quickSettle {
		return false
	}
	look := max(expect*9/10, time.Millisecond)
	if until := time.Now().Add(4 * expect); until.Before(deadline) {
		deadline = until
	}
	for ; ; look *= 2 {
		at := time.Now().Add(look)
		if at.After(deadline) {
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
		w.mu.Lock()
		if !pending(obs.status) {
			if w.waits[key] == cur {
				delete(w.waits, key)
				w.ended(cur, obs.status, time.Now())
			}
			w.mu.Unlock()
			return true
		}
		cur.pendingSeen = time.Now()
		w.mu.Unlock()
	}
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
	if err == nil || lb == nil || !errors.As(err, &re) || errors.As(err, new(conflict)) {
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
