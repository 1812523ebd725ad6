package loadbalancer

import (
	"context"
	"time"
)

// A load balancer created in one fully populated call can come back ACTIVE
// with its listeners (and their pools and members) PENDING_CREATE for good.
// On the lab's Zed Octavia (11.0.0) with the amphora provider every such
// create on an idle machine does (10 of 10, a script beside the bench; under
// load about one in four, when the worker is slow to read): the API hands
// the create to the worker before it commits the children, the worker
// reads the load balancer without them within milliseconds, builds the
// flow of a bare load balancer, marks it ACTIVE and never the children.
// Octavia then refuses every change under them with 409, and nothing in its
// API ends that state.
//
// Octavia marks the children of a change ACTIVE before the load balancer
// (amphora) or in the same status update (driver-agent providers), and
// puts the load balancer PENDING_UPDATE before any child of a later
// change, so a load balancer read ACTIVE whose every listener is
// PENDING_CREATE is such a create, or a read that raced the status update
// by milliseconds. Its listeners never served: replacing it loses nothing.
// Once that state has lasted StrandedAfter (seen twice, a margin of three
// orders of magnitude over the race), the Service's own load balancer is
// replaced as one in ERROR is (recreate.go: the floating IP moves to the
// new one), but created bare, its listeners then added one call each,
// which is the path the race does not hit. A shared load balancer is never
// replaced: it is reported as a Service's changes refused with 409 are
// (watch.go), for an admin.

// Once one of a provider's fully populated creates has been stranded, the
// Manager creates that provider's load balancers bare for strandedMemory:
// a cloud whose API races its worker does so again (every time on an idle
// lab, 30 in 15 minutes in the second real soak), and each would cost
// StrandedAfter and a second create.
const strandedMemory = time.Hour

// DefaultStrandedAfter is how long a load balancer may be seen stranded
// by its create before it is replaced: far over a read that raced a
// status update (milliseconds), and short, since on a cloud that strands
// every create it is the wait of the first Service after a start.
const DefaultStrandedAfter = 5 * time.Second

// strandedAtCreate says whether lb, read ACTIVE, holds the Service's
// listeners all PENDING_CREATE.
func strandedAtCreate(lb *LoadBalancer, own *Tree) bool {
	if lb.ProvisioningStatus != StatusActive || len(own.Listeners) == 0 {
		return false
	}
	for _, l := range own.Listeners {
		if l.ProvisioningStatus != statusPendingCreate {
			return false
		}
	}
	return true
}

const statusPendingCreate = "PENDING_CREATE"

// stranded answers a sync that found lb stranded by its create: waiting
// until it has been so for StrandedAfter, then its replacement.
func (m *Manager) stranded(ctx context.Context, lb *LoadBalancer, spec Spec) error {
	w := &m.busy
	w.mu.Lock()
	if w.stranded == nil {
		w.stranded = map[string]time.Time{}
	}
	since, ok := w.stranded[lb.ID]
	if !ok {
		since = time.Now()
		w.stranded[lb.ID] = since
	}
	w.mu.Unlock()
	if left := m.strandedAfter() - time.Since(since); left > 0 {
		return conflict{notReady(max(left, firstRecheck), ReasonWaitingForOctavia,
			"load balancer %s (%s) is ACTIVE but its listeners are PENDING_CREATE (a create Octavia did not finish): replacing it if it stays so",
			lb.Name, lb.ID)}
	}
	w.mu.Lock()
	if w.strandedBy == nil {
		w.strandedBy = map[string]time.Time{}
	}
	w.strandedBy[spec.Provider] = time.Now()
	w.mu.Unlock()
	bare := spec
	bare.Listeners = nil
	return m.recreate(ctx, lb, bare, "ACTIVE with its listeners PENDING_CREATE since "+since.UTC().Format(time.RFC3339)+" (a create Octavia did not finish; they never served)")
}

// createsStrand says whether a fully populated create of provider was
// stranded within strandedMemory: its creates are then made bare.
func (m *Manager) createsStrand(provider string) bool {
	m.busy.mu.Lock()
	defer m.busy.mu.Unlock()
	at, ok := m.busy.strandedBy[provider]
	return ok && time.Since(at) < strandedMemory
}

// unstrand forgets lb's stranded state (it is deleted, or seen whole).
func (m *Manager) unstrand(lb *LoadBalancer) {
	m.busy.mu.Lock()
	delete(m.busy.stranded, lb.ID)
	m.busy.mu.Unlock()
}

func (m *Manager) strandedAfter() time.Duration {
	if m.StrandedAfter > 0 {
		return m.StrandedAfter
	}
	return DefaultStrandedAfter
}
