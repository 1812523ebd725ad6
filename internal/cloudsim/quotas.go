package cloudsim

import "net/http"

// Quotas as Nova, Neutron and Octavia show them (read-only): fixed limits
// and, for the detail forms, what the project uses. A project reads its own
// quota; another project's needs admin.

var (
	novaQuota = map[string]int{"instances": 10, "cores": 20, "ram": 51200, "key_pairs": 100, "metadata_items": 128,
		"server_groups": 10, "server_group_members": 10, "injected_files": 5, "injected_file_content_bytes": 10240,
		"injected_file_path_bytes": 255}
	neutronQuota = map[string]int{"network": 100, "subnet": 100, "port": 500, "router": 10, "floatingip": 50,
		"security_group": 10, "security_group_rule": 100, "rbac_policy": 10, "subnetpool": -1}
)

func (s *Sim) routesQuotas(compute, network, lb routeFunc) {
	// Nova's detail form names limit, in_use and reserved; Neutron's
	// limit, used and reserved.
	nova := func(detail bool) http.HandlerFunc {
		return s.quotaHandler(ServiceCompute, "os-quota-sets:show", "quota_set", novaQuota, detail, "used")
	}
	neutron := func(detail bool) http.HandlerFunc {
		return s.quotaHandler(ServiceNetwork, "get_quota", "quota", neutronQuota, detail, "in_use")
	}
	compute("GET /os-quota-sets/{project}", "quota-sets.get", nova(false))
	compute("GET /os-quota-sets/{project}/detail", "quota-sets.detail", nova(true))
	network("GET /quotas/{project}", "quotas.get", neutron(false))
	network("GET /quotas/{project}/details", "quotas.details", neutron(true))
	lb("GET /lbaas/quotas/{project}", "quotas.get", s.octaviaQuota)
}

// quotaProject is the path's project when the caller may read its quota.
func quotaProject(w http.ResponseWriter, r *http.Request, service, action string) (string, bool) {
	p := r.PathValue("project")
	if p != projectOf(r) && !isAdmin(r) {
		writeErr(w, service, forbidden(service, action))
		return "", false
	}
	return p, true
}

// usage counts what project uses of each quota key.
func (st *state) usage(project string) map[string]int {
	u := map[string]int{}
	for _, sv := range st.servers.all() {
		if sv.ProjectID == project {
			u["instances"]++
			if fl, ok := st.flavors.get(sv.FlavorID); ok {
				u["cores"] += fl.VCPUs
				u["ram"] += fl.RAM
			}
		}
	}
	u["network"] = ownedBy(st, networkRes, project)
	u["subnet"] = ownedBy(st, subnetRes, project)
	u["port"] = ownedBy(st, portRes, project)
	u["router"] = ownedBy(st, routerRes, project)
	u["floatingip"] = ownedBy(st, fipRes, project)
	u["security_group"] = ownedBy(st, secGroupRes, project)
	u["security_group_rule"] = ownedBy(st, secRuleRes, project)
	return u
}

// ownedBy counts a resource's objects that project owns.
func ownedBy[T any](st *state, rs *resource[T], project string) int {
	n := 0
	for _, x := range rs.store(st).all() {
		if rs.owner(x) == project {
			n++
		}
	}
	return n
}

func quotaBody(limits, used map[string]int, detail bool) map[string]any {
	out := map[string]any{}
	for k, v := range limits {
		if detail {
			out[k] = map[string]any{"limit": v, "in_use": used[k], "used": used[k], "reserved": 0}
		} else {
			out[k] = v
		}
	}
	return out
}

// quotaHandler answers a service's quota of the path's project under key,
// in its detail form without the usage field the service does not name.
func (s *Sim) quotaHandler(service, action, key string, limits map[string]int, detail bool, without string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok := quotaProject(w, r, service, action)
		if !ok {
			return
		}
		s.mu.RLock()
		used := s.state.usage(p)
		s.mu.RUnlock()
		body := quotaBody(limits, used, detail)
		if detail {
			for _, v := range body {
				delete(v.(map[string]any), without)
			}
		}
		if service == ServiceCompute {
			body["id"] = p
		}
		writeJSON(w, http.StatusOK, map[string]any{key: body})
	}
}

func (s *Sim) octaviaQuota(w http.ResponseWriter, r *http.Request) {
	p, ok := quotaProject(w, r, ServiceLoadBalancer, "quota:get_one")
	if !ok {
		return
	}
	s.mu.RLock()
	limit := s.state.lbQuota
	s.mu.RUnlock()
	if limit == 0 {
		limit = -1
	}
	writeJSON(w, http.StatusOK, map[string]any{"quota": map[string]any{"project_id": p, "load_balancer": limit,
		"listener": -1, "pool": -1, "member": -1, "healthmonitor": -1, "l7policy": -1, "l7rule": -1}})
}
