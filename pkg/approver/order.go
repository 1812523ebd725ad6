package approver

import (
	"slices"
	"sync"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// A node's pending requests are decided oldest first, at most
// MaxPendingPerNode at a time. Sorting a node's pending requests at every
// sync made a flood of n requests cost n² log n (3.4 s per pass at 4,000).
// The order is kept per node instead, sorted once per change of that
// node's requests (a generation counter the informer's handler bumps) and
// shared by every sync in between: a flood costs one sort per decision,
// and a request's position is a map lookup.

// nodeOrder caches each user's pending requests in decision order.
type nodeOrder struct {
	mu     sync.Mutex
	gen    map[string]uint64 // user → generation, bumped on every change
	sorted map[string]*pendingList
	// sorting serializes the sorts of one user: a thousand workers that
	// find a flooding node's order stale wait for one sort, not do one each.
	sorting map[string]*sync.Mutex
}

// pendingList is one user's pending requests, oldest first, as of gen.
type pendingList struct {
	gen  uint64
	list []*certificatesv1.CertificateSigningRequest
	pos  map[string]int // CSR name → index in list
}

func newNodeOrder() *nodeOrder {
	return &nodeOrder{gen: map[string]uint64{}, sorted: map[string]*pendingList{}, sorting: map[string]*sync.Mutex{}}
}

// changed marks user's requests as changed (called after the cache was).
func (o *nodeOrder) changed(user string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gen[user]++
	delete(o.sorted, user)
}

// pending returns user's pending requests in order, computing them with
// list (then sorting) only when they changed since the last time.
func (o *nodeOrder) pending(user string, list func() []*certificatesv1.CertificateSigningRequest) *pendingList {
	o.mu.Lock()
	gen := o.gen[user]
	if p := o.sorted[user]; p != nil && p.gen == gen {
		o.mu.Unlock()
		return p
	}
	one := o.sorting[user]
	if one == nil {
		one = &sync.Mutex{}
		o.sorting[user] = one
	}
	o.mu.Unlock()
	one.Lock()
	defer one.Unlock()
	o.mu.Lock()
	gen = o.gen[user]
	if p := o.sorted[user]; p != nil && p.gen == gen {
		o.mu.Unlock()
		return p // sorted by another worker meanwhile
	}
	o.mu.Unlock()
	csrs := list()
	slices.SortFunc(csrs, func(a, b *certificatesv1.CertificateSigningRequest) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return compareStrings(a.Name, b.Name)
	})
	p := &pendingList{gen: gen, list: csrs, pos: make(map[string]int, len(csrs))}
	for i, c := range csrs {
		p.pos[c.Name] = i
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.gen[user] != gen: // changed meanwhile: the next call sorts again
	case len(csrs) == 0:
		// Nothing pending: keep no list (the generation stays, one number
		// per node, so that a stale sort can never pass for a newer one).
		delete(o.sorted, user)
	default:
		o.sorted[user] = p
	}
	return p
}

// position is name's index in p, or -1.
func (p *pendingList) position(name string) int {
	if i, ok := p.pos[name]; ok {
		return i
	}
	return -1
}
