package approver

import (
	"sync"
	"time"
)

// One node's kubelet needs one serving certificate at a time, plus one per
// rotation and per address change: a handful an hour. A node that asks for
// hundreds (each approved and signed: 300 identical requests were) or that
// sends request after bad request (each denial two apiserver writes from
// the client approvals use) is held back by a per-node budget over a
// sliding window; what is over it stays pending and is looked at again
// when the window has room.

// Defaults of the per-node budgets.
const (
	DefaultNodeBudgetWindow  = time.Hour
	DefaultMaxIssuedPerNode  = 10
	DefaultMaxDenialsPerNode = 10
	reasonOverIssueBudget    = "TooManyCertificatesForNode"
	reasonOverDenialBudget   = "TooManyDenialsForNode"
	maxTrackedNodeTimestamps = 64 // per node and kind; a budget above this is capped to it
)

// nodeBudget counts events per node over a sliding window.
type nodeBudget struct {
	limit  int
	window time.Duration
	now    func() time.Time

	mu   sync.Mutex
	used map[string][]time.Time // node → times within the window, oldest first
}

// newNodeBudget returns a budget of limit per window; limit <= 0 is none
// (nil, whose methods always allow).
func newNodeBudget(limit int, window time.Duration, now func() time.Time) *nodeBudget {
	if limit <= 0 {
		return nil
	}
	return &nodeBudget{limit: min(limit, maxTrackedNodeTimestamps), window: window, now: now, used: map[string][]time.Time{}}
}

// reserve counts one for node now when the budget has room (several
// workers decide one node's requests at once: checking and counting are one
// step), else reports how long until it has.
func (b *nodeBudget) reserve(node string) (bool, time.Duration) {
	if b == nil {
		return true, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	times := b.prune(node, now)
	if len(times) >= b.limit {
		return false, times[0].Add(b.window).Sub(now)
	}
	b.used[node] = append(times, now)
	return true, 0
}

// release gives back node's latest reservation (its write failed).
func (b *nodeBudget) release(node string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if times := b.used[node]; len(times) > 0 {
		b.used[node] = times[:len(times)-1]
	}
}

// prune drops node's times older than the window (and the node when none
// is left, so the map holds only nodes active within a window).
func (b *nodeBudget) prune(node string, now time.Time) []time.Time {
	times := b.used[node]
	i := 0
	for i < len(times) && now.Sub(times[i]) >= b.window {
		i++
	}
	times = times[i:]
	if len(times) == 0 {
		delete(b.used, node)
	} else {
		b.used[node] = times
	}
	return times
}
