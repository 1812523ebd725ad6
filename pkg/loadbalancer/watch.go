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
//   - a Service whose load balancer is busy comes back soon and then less
//     often (recheckAfter): a quarter of a second at first, a third of the
//     time it has waited so far later, never more than the Manager's
//     requeue;
//   - while it waits, its sync reads the load balancer's state from one
//     view of this cluster's load balancers, shared by every waiting
//     Service and refreshed by one list call (plus a read of each waited
//     load balancer the list cannot show: one the Service shares but this
//     cluster did not make), so Services waiting together cost one call
//     per recheck, not one each;
//   - once the view shows the load balancer settled (or gone, or the view
//     cannot be read) the sync runs whole, as it did before.
//
// It only ever answers "still busy": every decision is the sync's.

const (
	// firstRecheck is the first wait after a change.
	firstRecheck = 250 * time.Millisecond
	// recheckShare is the part of the time waited so far the next wait
	// may be: a load balancer that took 3 s is seen settled by 4 s.
	recheckShare = 3 // 1/3
	// viewSlack lets a refresh serve Services due shortly after it.
	viewSlack = 50 * time.Millisecond
	// forgetWait drops a wait whose Service has not come back this long
	// (a Service deleted while it waited, then never synced).
	forgetWait = time.Hour
)

// busyWatch is the Manager's record of Services waiting for Octavia and
// its shared view of their load balancers.
type busyWatch struct {
	mu    sync.Mutex
	waits map[waitKey]*wait
	// view is each watched load balancer's provisioning status when read
	// at readAt; a watched one absent from it is gone.
	view   map[string]string
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

// wait is one Service waiting for one load balancer.
type wait struct {
	lbID, lbName, tag string
	since, due        time.Time
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
	cur.due = now.Add(d)
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
	st, err := m.busyStatus(ctx, cur)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Reading busy load balancers failed; syncing in full", "service", refOf(svc).String(), "err", err)
	}
	if err != nil || !pending(st) {
		w.mu.Lock()
		if w.waits[waitKeyOf(svc)] == cur {
			delete(w.waits, waitKeyOf(svc))
		}
		w.mu.Unlock()
		return nil
	}
	id := Identity{ClusterUID: strings.TrimPrefix(cur.tag, clusterUIDTagPrefix)}
	lb := &LoadBalancer{ID: cur.lbID, Name: cur.lbName}
	return m.waitFor(svc, id, lb, ReasonWaitingForOctavia, "load balancer %s (%s) is %s", cur.lbName, cur.lbID, st)
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

// busyStatus is cur's load balancer's status from a view read at or after
// the time cur is due; it refreshes the view when it is older, one
// refresh at a time, the others waiting for it.
func (m *Manager) busyStatus(ctx context.Context, cur *wait) (string, error) {
	w := &m.busy
	// A Service back before it is due (its spec changed) needs a view
	// read since it came.
	need := cur.due.Add(-viewSlack)
	if now := time.Now(); now.Before(need) {
		need = now
	}
	for {
		w.mu.Lock()
		if !w.readAt.Before(need) {
			st, ok := w.view[cur.lbID]
			w.mu.Unlock()
			if !ok {
				return "", nil // gone, or not watched when read: sync in full
			}
			return st, nil
		}
		if ch := w.refreshing; ch != nil {
			w.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return "", ctx.Err()
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
			return "", err
		}
	}
}

// readBusy reads the statuses of the watched load balancers: one list of
// each cluster tag's load balancers, and one read of each watched one the
// lists do not show (a shared load balancer this cluster did not make).
func (m *Manager) readBusy(ctx context.Context, watched map[string]string) (map[string]string, error) {
	view := map[string]string{}
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
				view[lb.ID] = lb.ProvisioningStatus
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
			view[lbID] = lb.ProvisioningStatus
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
