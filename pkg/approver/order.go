package approver

import (
	"sync"
	"time"

	"github.com/google/btree"
	certificatesv1 "k8s.io/api/certificates/v1"
)

// A node's pending requests are decided oldest first, at most
// MaxPendingPerNode at a time. Sorting a node's pending requests at every
// sync made a flood of n requests cost n² log n (3.4 s per pass at 4,000);
// sorting them once per change of that node's requests still cost a sort
// of the whole flood per decision. The order is kept incrementally
// instead: each user's pending requests sit in a B-tree keyed by creation
// time, the informer's handler inserts and removes one request per event
// (O(log n)), and "is this request among the oldest k" reads k entries.

// orderKey places a request in its user's order: oldest first, the name
// breaking ties (creation times have a second's resolution).
type orderKey struct {
	created time.Time
	name    string
}

func lessKey(a, b orderKey) bool {
	if !a.created.Equal(b.created) {
		return a.created.Before(b.created)
	}
	return a.name < b.name
}

// orderMember is where one request sits: its user and key.
type orderMember struct {
	user string
	key  orderKey
}

// nodeOrder holds each user's pending requests in decision order.
type nodeOrder struct {
	mu     sync.Mutex
	less   btree.LessFunc[orderKey]
	byUser map[string]*btree.BTreeG[orderKey]
	member map[string]orderMember // CSR name → where it sits
}

func newNodeOrder() *nodeOrder {
	return newNodeOrderWith(lessKey)
}

// newNodeOrderWith orders by less (tests count its calls).
func newNodeOrderWith(less btree.LessFunc[orderKey]) *nodeOrder {
	return &nodeOrder{less: less, byUser: map[string]*btree.BTreeG[orderKey]{}, member: map[string]orderMember{}}
}

// put places csr in its user's order (again, if its user or creation time
// changed: a request deleted and created again under the same name).
func (o *nodeOrder) put(csr *certificatesv1.CertificateSigningRequest) {
	m := orderMember{user: csr.Spec.Username, key: orderKey{created: csr.CreationTimestamp.Time, name: csr.Name}}
	o.mu.Lock()
	defer o.mu.Unlock()
	if old, ok := o.member[csr.Name]; ok {
		if old == m {
			return
		}
		o.removeLocked(csr.Name, old)
	}
	t := o.byUser[m.user]
	if t == nil {
		t = btree.NewG(16, o.less)
		o.byUser[m.user] = t
	}
	t.ReplaceOrInsert(m.key)
	o.member[csr.Name] = m
}

// remove takes the request named name out of the order, if it is in it.
func (o *nodeOrder) remove(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if m, ok := o.member[name]; ok {
		o.removeLocked(name, m)
	}
}

func (o *nodeOrder) removeLocked(name string, m orderMember) {
	delete(o.member, name)
	t := o.byUser[m.user]
	if t == nil {
		return
	}
	t.Delete(m.key)
	if t.Len() == 0 {
		delete(o.byUser, m.user) // the map holds only users with pending requests
	}
}

// first returns the names of user's k oldest pending requests (all of
// them when k <= 0).
func (o *nodeOrder) first(user string, k int) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.byUser[user]
	if t == nil {
		return nil
	}
	n := t.Len()
	if k > 0 {
		n = min(n, k)
	}
	out := make([]string, 0, n)
	t.Ascend(func(key orderKey) bool {
		out = append(out, key.name)
		return len(out) < n
	})
	return out
}

// admits reports whether the request named name may be decided now under
// a cap of limit pending requests per user: it is among user's limit
// oldest, or not in the order yet (the handler has not seen it) while
// fewer than limit are. It also returns how many of user's are pending.
func (o *nodeOrder) admits(user, name string, limit int) (bool, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.byUser[user]
	if t == nil {
		return true, 0
	}
	n := t.Len()
	m, in := o.member[name]
	if !in || m.user != user {
		return n < limit, n
	}
	// The request is among the oldest limit exactly when fewer than limit
	// come before it; counting stops at limit.
	before := 0
	t.AscendLessThan(m.key, func(orderKey) bool {
		before++
		return before < limit
	})
	return before < limit, n
}

// pendingCount returns how many of user's requests are in the order.
func (o *nodeOrder) pendingCount(user string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if t := o.byUser[user]; t != nil {
		return t.Len()
	}
	return 0
}
