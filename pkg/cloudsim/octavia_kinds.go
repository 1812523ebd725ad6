package cloudsim

import "net/http"

// Octavia's resources, declared for the kit (kit.go). Changes go through
// the load balancer's lock (octavia_children.go), so only reads and the
// lists come from the kit here.

func (o *lbStatus) owner() string { return o.ProjectID }

func octaviaNotFound(what string) func(string) error {
	return func(id string) error { return apiErr(http.StatusNotFound, "", "%s %s not found.", what, id) }
}

var (
	lbRes = &resource[lbObj]{service: ServiceLoadBalancer, one: "loadbalancer", many: "loadbalancers",
		store: func(st *state) *coll[lbObj] { return st.lb.lbs }, owner: projectIDOf[*lbObj],
		view: (*Sim).lbView, notFound: octaviaNotFound("Load Balancer")}
	listenerRes = &resource[listenerObj]{service: ServiceLoadBalancer, one: "listener", many: "listeners",
		store: func(st *state) *coll[listenerObj] { return st.lb.listeners }, owner: projectIDOf[*listenerObj],
		view: (*Sim).listenerView, notFound: octaviaNotFound("Listener")}
	poolRes = &resource[poolObj]{service: ServiceLoadBalancer, one: "pool", many: "pools",
		store: func(st *state) *coll[poolObj] { return st.lb.pools }, owner: projectIDOf[*poolObj],
		view: (*Sim).poolView, notFound: octaviaNotFound("Pool")}
	monitorRes = &resource[monitorObj]{service: ServiceLoadBalancer, one: "healthmonitor", many: "healthmonitors",
		store: func(st *state) *coll[monitorObj] { return st.lb.monitors }, owner: projectIDOf[*monitorObj],
		view: (*Sim).monitorView, notFound: octaviaNotFound("Health Monitor")}
	memberRes = &resource[memberObj]{service: ServiceLoadBalancer, one: "member", many: "members",
		store: func(st *state) *coll[memberObj] { return st.lb.members }, owner: projectIDOf[*memberObj],
		view: (*Sim).memberView, notFound: octaviaNotFound("Member")}
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
