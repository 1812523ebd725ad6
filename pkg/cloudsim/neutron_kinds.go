package cloudsim

import "net/http"

// Neutron's resources, declared for the kit (kit.go): store, owner, who
// else may read them, view and 404 wording.

func neutronNotFound(typ, format string) func(string) error {
	return func(id string) error { return apiErr(http.StatusNotFound, typ, format, id) }
}

func projectIDOf[T interface{ owner() string }](x T) string { return x.owner() }

func (n *network) owner() string    { return n.ProjectID }
func (sn *subnet) owner() string    { return sn.ProjectID }
func (p *port) owner() string       { return p.ProjectID }
func (rt *router) owner() string    { return rt.ProjectID }
func (f *floatingIP) owner() string { return f.ProjectID }
func (g *secGroup) owner() string   { return g.ProjectID }
func (x *secRule) owner() string    { return x.ProjectID }

var (
	networkRes = &resource[network]{service: ServiceNetwork, one: "network", many: "networks", action: "network",
		store: func(st *state) *coll[network] { return st.networks }, owner: projectIDOf[*network],
		public:   func(_ *state, n *network) bool { return n.External || n.Shared },
		view:     (*Sim).networkView,
		notFound: neutronNotFound("NetworkNotFound", "Network %s could not be found.")}
	subnetRes = &resource[subnet]{service: ServiceNetwork, one: "subnet", many: "subnets", action: "subnet",
		store: func(st *state) *coll[subnet] { return st.subnets }, owner: projectIDOf[*subnet],
		public: func(st *state, sn *subnet) bool {
			n := st.networks.byID[sn.NetworkID]
			return n != nil && (n.External || n.Shared)
		},
		view:     (*Sim).subnetView,
		notFound: neutronNotFound("SubnetNotFound", "Subnet %s could not be found.")}
	portRes = &resource[port]{service: ServiceNetwork, one: "port", many: "ports", action: "port",
		store: func(st *state) *coll[port] { return st.ports }, owner: projectIDOf[*port],
		view:     (*Sim).portView,
		notFound: neutronNotFound("PortNotFound", "Port %s could not be found.")}
	routerRes = &resource[router]{service: ServiceNetwork, one: "router", many: "routers", action: "router",
		store: func(st *state) *coll[router] { return st.routers }, owner: projectIDOf[*router],
		view:     (*Sim).routerView,
		notFound: neutronNotFound("RouterNotFound", "Router %s could not be found")}
	fipRes = &resource[floatingIP]{service: ServiceNetwork, one: "floatingip", many: "floatingips", action: "floatingip",
		store: func(st *state) *coll[floatingIP] { return st.fips }, owner: projectIDOf[*floatingIP],
		view:     (*Sim).fipView,
		notFound: neutronNotFound("FloatingIPNotFound", "Floating IP %s could not be found")}
	secGroupRes = &resource[secGroup]{service: ServiceNetwork, one: "security_group", many: "security_groups", action: "security_group",
		store: func(st *state) *coll[secGroup] { return st.secGroups }, owner: projectIDOf[*secGroup],
		view:     (*Sim).secGroupView,
		notFound: neutronNotFound("SecurityGroupNotFound", "Security group %s does not exist")}
	secRuleRes = &resource[secRule]{service: ServiceNetwork, one: "security_group_rule", many: "security_group_rules", action: "security_group_rule",
		store: func(st *state) *coll[secRule] { return st.secRules }, owner: projectIDOf[*secRule],
		view:     func(_ *Sim, x *secRule) map[string]any { return ruleView(x) },
		notFound: neutronNotFound("SecurityGroupRuleNotFound", "Security group rule %s does not exist")}
)

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
