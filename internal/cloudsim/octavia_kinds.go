package cloudsim

import "net/http"

// Octavia's resources, declared for the kit (kit.go). Changes go through
// the load balancer's lock (octavia_children.go), so only reads and the
// lists come from the kit here.

func (o *lbStatus) owner() string { return o.ProjectID }

func octaviaNotFound(what string) func(string) error {
	return func(id string) error { return apiErr(http.StatusNotFound, "", "%s %s not found.", what, id) }
}

// octaviaResource declares an Octavia collection; what names the kind in
// 404s ("Load Balancer").
func octaviaResource[T any, P interface {
	*T
	owner() string
}](one, many, what string, store func(*state) *coll[T], view func(*Sim, *T) map[string]any) *resource[T] {
	return &resource[T]{service: ServiceLoadBalancer, one: one, many: many, action: one, store: store,
		owner: func(x *T) string { return P(x).owner() }, view: view, notFound: octaviaNotFound(what)}
}

var (
	lbRes = octaviaResource[lbObj]("loadbalancer", "loadbalancers", "Load Balancer",
		func(st *state) *coll[lbObj] { return st.lb.lbs }, (*Sim).lbView)
	listenerRes = octaviaResource[listenerObj]("listener", "listeners", "Listener",
		func(st *state) *coll[listenerObj] { return st.lb.listeners }, (*Sim).listenerView)
	poolRes = octaviaResource[poolObj]("pool", "pools", "Pool",
		func(st *state) *coll[poolObj] { return st.lb.pools }, (*Sim).poolView)
	monitorRes = octaviaResource[monitorObj]("healthmonitor", "healthmonitors", "Health Monitor",
		func(st *state) *coll[monitorObj] { return st.lb.monitors }, (*Sim).monitorView)
	memberRes = octaviaResource[memberObj]("member", "members", "Member",
		func(st *state) *coll[memberObj] { return st.lb.members }, (*Sim).memberView)
)

func (o *lbStatus) lbOf() string { return o.LBID }

// ofLB narrows a child list to ?loadbalancer_id=, which Octavia filters on
// although the views name the load balancer only as a reference.
func ofLB[T any, P interface {
	*T
	lbOf() string
}](store func(*state) *coll[T]) func(*state, *http.Request) ([]*T, error) {
	return func(st *state, r *http.Request) ([]*T, error) {
		all := store(st).all()
		lbID := r.URL.Query().Get("loadbalancer_id")
		if lbID == "" {
			return all, nil
		}
		var out []*T
		for _, x := range all {
			if P(x).lbOf() == lbID {
				out = append(out, x)
			}
		}
		return out, nil
	}
}

// membersOfPool lists the members of the path's pool: 404 without it.
func membersOfPool(st *state, r *http.Request) ([]*memberObj, error) {
	poolID := r.PathValue("pool")
	if _, ok := st.lb.pools.get(poolID); !ok {
		return nil, apiErr(http.StatusNotFound, "", "Pool %s not found.", poolID)
	}
	var out []*memberObj
	for _, m := range st.lb.members.all() {
		if m.PoolID == poolID {
			out = append(out, m)
		}
	}
	return out, nil
}
