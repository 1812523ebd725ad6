package cloudsim

import "net/http"

// Neutron's resources, declared for the kit (kit.go): store, owner, who
// else may read them, view and 404 wording.

func neutronNotFound(typ, format string) func(string) error {
	return func(id string) error { return apiErr(http.StatusNotFound, typ, format, id) }
}

func (n *network) owner() string    { return n.ProjectID }
func (sn *subnet) owner() string    { return sn.ProjectID }
func (p *port) owner() string       { return p.ProjectID }
func (rt *router) owner() string    { return rt.ProjectID }
func (f *floatingIP) owner() string { return f.ProjectID }
func (g *secGroup) owner() string   { return g.ProjectID }
func (x *secRule) owner() string    { return x.ProjectID }

// neutronResource declares a Neutron collection: one is the JSON key of an
// object (and the policy target), many the collection's.
func neutronResource[T any, P interface {
	*T
	owner() string
}](one, many string, store func(*state) *coll[T], view func(*Sim, *T) map[string]any, notFoundType, notFound string) *resource[T] {
	return &resource[T]{service: ServiceNetwork, one: one, many: many, action: one, store: store,
		owner: func(x *T) string { return P(x).owner() }, view: view, notFound: neutronNotFound(notFoundType, notFound)}
}

var (
	networkRes = withPublic(neutronResource[network]("network", "networks", func(st *state) *coll[network] { return st.networks },
		(*Sim).networkView, "NetworkNotFound", "Network %s could not be found."),
		func(_ *state, n *network) bool { return n.External || n.Shared })
	subnetRes = withPublic(neutronResource[subnet]("subnet", "subnets", func(st *state) *coll[subnet] { return st.subnets },
		(*Sim).subnetView, "SubnetNotFound", "Subnet %s could not be found."),
		func(st *state, sn *subnet) bool {
			n := st.networks.byID[sn.NetworkID]
			return n != nil && (n.External || n.Shared)
		})
	portRes = withRedact(neutronResource[port]("port", "ports", func(st *state) *coll[port] { return st.ports },
		(*Sim).portView, "PortNotFound", "Port %s could not be found."), redactPortBinding)
	routerRes = neutronResource[router]("router", "routers", func(st *state) *coll[router] { return st.routers },
		(*Sim).routerView, "RouterNotFound", "Router %s could not be found")
	fipRes = neutronResource[floatingIP]("floatingip", "floatingips", func(st *state) *coll[floatingIP] { return st.fips },
		(*Sim).fipView, "FloatingIPNotFound", "Floating IP %s could not be found")
	secGroupRes = neutronResource[secGroup]("security_group", "security_groups", func(st *state) *coll[secGroup] { return st.secGroups },
		(*Sim).secGroupView, "SecurityGroupNotFound", "Security group %s does not exist")
	secRuleRes = neutronResource[secRule]("security_group_rule", "security_group_rules", func(st *state) *coll[secRule] { return st.secRules },
		func(_ *Sim, x *secRule) map[string]any { return ruleView(x) }, "SecurityGroupRuleNotFound", "Security group rule %s does not exist")
)

// withPublic makes a resource readable by every project where public says so.
func withRedact[T any](rs *resource[T], redact func(*http.Request, map[string]any)) *resource[T] {
	rs.redact = redact
	return rs
}

func withPublic[T any](rs *resource[T], public func(*state, *T) bool) *resource[T] {
	rs.public = public
	return rs
}

// portsByDevice is the hot path of a CCM: the ports of one server, from
// the device index instead of a scan.
func portsByDevice(st *state, r *http.Request) ([]*port, error) {
	devs, ok := r.URL.Query()["device_id"]
	if !ok {
		return st.ports.all(), nil
	}
	var out []*port
	for _, d := range devs {
		for _, id := range st.portsByDev[d] {
			out = append(out, st.ports.byID[id])
		}
	}
	return out, nil
}
