package cloudsim

import "net/http"

// Version documents. Clients probe unversioned catalog URLs (gophercloud
// since v2.8 for every endpoint whose URL carries no version) and choose a
// major version from the answer, so each service serves its real document.

const (
	novaMaxMicroversion    = "2.96"
	octaviaMaxVersion      = "v2.28"
	versionsUpdatedCompute = "2013-07-23T11:33:21Z"
)

func (s *Sim) routesVersions(mux *http.ServeMux) {
	anon := func(svc string) op { return op{service: svc, name: "versions", anonymous: true} }
	s.handle(mux, "GET "+computePrefix+"/{$}", anon(ServiceCompute), func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": []any{
			novaVersionDoc(baseURL(r)+computePrefix+"/v2/", "v2.0", "SUPPORTED", "", ""),
			novaVersionDoc(baseURL(r)+computePrefix+"/v2.1/", "v2.1", "CURRENT", novaMaxMicroversion, "2.1"),
		}})
	})
	s.handle(mux, "GET "+computePrefix+"/v2.1/{$}", anon(ServiceCompute), func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"version": novaVersionDoc(baseURL(r)+computePrefix+"/v2.1/", "v2.1", "CURRENT", novaMaxMicroversion, "2.1")})
	})
	s.handle(mux, "GET "+computePrefix+"/v2/{$}", anon(ServiceCompute), func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"version": novaVersionDoc(baseURL(r)+computePrefix+"/v2/", "v2.0", "SUPPORTED", "", "")})
	})
	s.handle(mux, "GET "+networkPrefix+"/v2.0/{$}", anon(ServiceNetwork), func(w http.ResponseWriter, r *http.Request) {
		var res []any
		for _, c := range []struct{ name, coll string }{{"network", "networks"}, {"subnet", "subnets"}, {"port", "ports"},
			{"router", "routers"}, {"floatingip", "floatingips"}, {"security_group", "security-groups"}, {"security_group_rule", "security-group-rules"}} {
			res = append(res, map[string]any{"name": c.name, "collection": c.coll,
				"links": []any{link(baseURL(r)+networkPrefix+"/v2.0/"+c.coll, "self")}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"resources": res})
	})
	s.handle(mux, "GET "+networkPrefix+"/{$}", anon(ServiceNetwork), func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"versions": []any{map[string]any{
			"id": "v2.0", "status": "CURRENT", "links": []any{link(baseURL(r)+networkPrefix+"/v2.0/", "self")},
		}}})
	})
	s.handle(mux, "GET "+lbPrefix+"/{$}", anon(ServiceLoadBalancer), func(w http.ResponseWriter, r *http.Request) {
		href := baseURL(r) + lbPrefix + "/v2/"
		var vs []any
		for _, v := range []string{"v2.0", "v2.1", "v2.2", "v2.10", "v2.20", "v2.27"} {
			vs = append(vs, map[string]any{"id": v, "status": "SUPPORTED", "updated": "2016-12-11T00:00:00Z", "links": []any{link(href, "self")}})
		}
		vs = append(vs, map[string]any{"id": octaviaMaxVersion, "status": "CURRENT", "updated": "2023-02-01T00:00:00Z", "links": []any{link(href, "self")}})
		writeJSON(w, http.StatusOK, map[string]any{"versions": vs})
	})
}

func novaVersionDoc(href, id, status, maxMV, minMV string) map[string]any {
	return map[string]any{
		"id": id, "status": status, "version": maxMV, "min_version": minMV, "updated": versionsUpdatedCompute,
		"links": []any{link(href, "self")},
	}
}
