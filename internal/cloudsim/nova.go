package cloudsim

import (
	"errors"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Nova (compute v2.1): servers, flavors, availability zones and interface
// attachments, with Nova's filters, marker pagination and microversions.

const novaMaxLimit = 1000

func (s *Sim) routesCompute(mux *http.ServeMux) {
	h := s.serviceRoutes(mux, ServiceCompute, computePrefix+"/v2.1", s.withMicroversion)
	h("GET /servers", "servers.list", s.listServers(false))
	h("GET /servers/detail", "servers.detail", s.listServers(true))
	h("GET /servers/{id}", "servers.get", serverRes.with(s, "", s.getServer))
	h("POST /servers", "servers.create", s.novaCreateServer)
	h("DELETE /servers/{id}", "servers.delete", serverRes.with(s, "delete", s.novaDeleteServer))
	h("POST /servers/{id}/action", "servers.action", withBody(s, serverRes, "action", s.serverAction))
	h("GET /servers/{id}/metadata", "servers.metadata", serverRes.with(s, "", s.serverMetadata))
	h("POST /servers/{id}/metadata", "servers.metadata.update", withBody(s, serverRes, "update", s.setServerMetadata(false)))
	h("PUT /servers/{id}/metadata", "servers.metadata.reset", withBody(s, serverRes, "update", s.setServerMetadata(true)))
	h("GET /servers/{id}/ips", "servers.ips", serverRes.with(s, "", s.serverIPs))
	h("GET /servers/{id}/ips/{network}", "servers.ips.network", serverRes.with(s, "", s.serverIPs))
	h("GET /servers/{id}/os-interface", "interfaces.list", serverRes.with(s, "", s.listInterfaces))
	h("GET /servers/{id}/os-interface/{port}", "interfaces.get", serverRes.with(s, "", s.getInterface))
	h("POST /servers/{id}/os-interface", "interfaces.create", withBody(s, serverRes, "update", s.attachInterface))
	h("DELETE /servers/{id}/os-interface/{port}", "interfaces.delete", serverRes.with(s, "update", s.detachInterface))
	h("GET /flavors", "flavors.list", s.listFlavors(false))
	h("GET /flavors/detail", "flavors.detail", s.listFlavors(true))
	h("GET /flavors/{id}", "flavors.get", flavorRes.with(s, "", s.getFlavor))
	h("GET /flavors/{id}/os-extra_specs", "flavors.extra_specs.list", flavorRes.with(s, "", s.flavorExtraSpecs))
	h("GET /flavors/{id}/os-extra_specs/{key}", "flavors.extra_specs.get", flavorRes.with(s, "", s.flavorExtraSpecs))
	h("GET /os-availability-zone", "availability-zones.list", s.listAZs)
	h("GET /os-availability-zone/detail", "availability-zones.detail", s.listAZs)
	s.routesQuotas(h, s.serviceRoutes(mux, ServiceNetwork, networkPrefix+"/v2.0", nil),
		s.serviceRoutes(mux, ServiceLoadBalancer, lbPrefix+"/v2", nil))
}

// withMicroversion validates the requested microversion and echoes it.
func (s *Sim) withMicroversion(fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		mv, err := novaMicroversion(r)
		if err != nil {
			writeErr(w, ServiceCompute, err)
			return
		}
		v := strconv.Itoa(mv.major) + "." + strconv.Itoa(mv.minor)
		w.Header().Set("X-OpenStack-Nova-API-Version", v)
		w.Header().Set("OpenStack-API-Version", "compute "+v)
		w.Header().Set("Vary", "OpenStack-API-Version, X-OpenStack-Nova-API-Version")
		r.Header.Set("X-Cloudsim-MV", v)
		fn(w, r)
	}
}

func mvOf(r *http.Request) microversion {
	mv, _ := novaMicroversion(r)
	return mv
}

// allTenants reads Nova's all_tenants: only admin may ask for it.
func allTenants(r *http.Request, detail bool) (bool, error) {
	all, err := queryBool(r.URL.Query(), "all_tenants")
	if err != nil {
		return false, apiErr(http.StatusBadRequest, "", "Invalid input received: %v", err)
	}
	if all && !isAdmin(r) {
		policy := "servers:index:get_all_tenants"
		if detail {
			policy = "servers:detail:get_all_tenants"
		}
		return false, forbidden(ServiceCompute, policy)
	}
	return all, nil
}

func (s *Sim) listServers(detail bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		allTenants, err := allTenants(r, detail)
		if err != nil {
			writeErr(w, ServiceCompute, err)
			return
		}
		limit := novaMaxLimit
		if l := q.Get("limit"); l != "" {
			n, err := strconv.Atoi(l)
			if err != nil || n < 0 {
				novaError(w, http.StatusBadRequest, "Invalid input for query parameters limit. Value: %s.", l)
				return
			}
			limit = min(n, novaMaxLimit)
		}
		var nameRE, ipRE *regexp.Regexp
		if n := q.Get("name"); n != "" {
			if nameRE, err = regexp.Compile(n); err != nil {
				novaError(w, http.StatusBadRequest, "Invalid input for query parameters name: %v", err)
				return
			}
		}
		if n := q.Get("ip"); n != "" {
			if ipRE, err = regexp.Compile(n); err != nil {
				novaError(w, http.StatusBadRequest, "Invalid input for query parameters ip: %v", err)
				return
			}
		}
		status := strings.ToUpper(q.Get("status"))
		var since time.Time
		if cs := q.Get("changes-since"); cs != "" {
			if since, err = time.Parse(time.RFC3339, cs); err != nil {
				novaError(w, http.StatusBadRequest, "Invalid input for query parameters changes-since.")
				return
			}
		}
		base := baseURL(r)
		mv := mvOf(r)

		s.mu.RLock()
		locked := true
		defer func() {
			if locked {
				s.mu.RUnlock()
			}
		}()
		st := s.state
		// Nova lists newest first.
		start := len(st.servers.order) - 1
		if m := q.Get("marker"); m != "" {
			pos, ok := st.servers.pos[m]
			if !ok {
				novaError(w, http.StatusBadRequest, "marker [%s] not found", m)
				return
			}
			start = pos - 1
		}
		var fips map[string][]*floatingIP
		if detail || ipRE != nil {
			fips = st.fipIndex()
		}
		tokProject := projectOf(r)
		flavorID := q.Get("flavor")
		az := q.Get("availability_zone")
		out := make([]any, 0, min(limit, 64))
		last := ""
		for i := start; i >= 0 && len(out) < limit; i-- {
			sv := st.servers.at(i)
			if sv == nil {
				continue
			}
			if !(allTenants || sv.ProjectID == tokProject) || (nameRE != nil && !nameRE.MatchString(sv.Name)) ||
				(status != "" && sv.Status != status) || (flavorID != "" && sv.FlavorID != flavorID) ||
				(az != "" && sv.AZ != az) || (!since.IsZero() && sv.Updated.Before(since)) {
				continue
			}
			if ipRE != nil && !matchesIP(st.addresses(sv, fips), ipRE) {
				continue
			}
			if detail {
				out = append(out, s.serverView(sv, base, mv, fips))
			} else {
				out = append(out, map[string]any{"id": sv.ID, "name": sv.Name, "links": s.serverLinks(base, sv.ID)})
			}
			last = sv.ID
		}
		body := map[string]any{"servers": out}
		if len(out) == limit && limit > 0 {
			nq := url.Values{}
			for k, v := range q {
				nq[k] = v
			}
			nq.Set("limit", strconv.Itoa(limit))
			nq.Set("marker", last)
			body["servers_links"] = []any{link(base+r.URL.Path+"?"+nq.Encode(), "next")}
		}
		// Encoding is the expensive part: do it without holding the lock.
		s.mu.RUnlock()
		locked = false
		writeJSON(w, http.StatusOK, body)
	}
}

func matchesIP(addrs []Address, re *regexp.Regexp) bool {
	for _, a := range addrs {
		if a.Type == "fixed" && re.MatchString(a.IP) {
			return true
		}
	}
	return false
}

// serverRes is Nova's servers for the kit: a project's own, any with admin.
var serverRes = &resource[server]{service: ServiceCompute, one: "server", many: "servers", action: "server",
	store: func(st *state) *coll[server] { return st.servers }, owner: func(sv *server) string { return sv.ProjectID },
	notFound: func(id string) error { return apiErr(http.StatusNotFound, "", "Instance %s could not be found.", id) }}

func (s *Sim) getServer(w http.ResponseWriter, r *http.Request, _ *state, sv *server) {
	writeJSON(w, http.StatusOK, map[string]any{"server": s.serverView(sv, baseURL(r), mvOf(r), nil)})
}

func (s *Sim) serverMetadata(w http.ResponseWriter, _ *http.Request, _ *state, sv *server) {
	writeJSON(w, http.StatusOK, map[string]any{"metadata": sv.Metadata})
}

func (s *Sim) novaDeleteServer(w http.ResponseWriter, _ *http.Request, st *state, sv *server) {
	_ = st.deleteServer(sv.ID)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Sim) serverAction(w http.ResponseWriter, _ *http.Request, _ *state, sv *server, b *map[string]any) {
	body := *b
	vm, _ := vmState(sv.Status)
	conflict := func(action string) {
		novaError(w, http.StatusConflict, "Cannot '%s' instance %s while it is in vm_state %s", action, sv.ID, vm)
	}
	switch {
	case has(body, "os-stop"):
		if sv.Status != "ACTIVE" {
			conflict("stop")
			return
		}
		sv.Status = "SHUTOFF"
	case has(body, "os-start"):
		if sv.Status != "SHUTOFF" {
			conflict("start")
			return
		}
		sv.Status = "ACTIVE"
	case has(body, "reboot"):
		if sv.Status != "ACTIVE" && sv.Status != "SHUTOFF" {
			conflict("reboot")
			return
		}
		sv.Status = "ACTIVE"
	default:
		novaError(w, http.StatusBadRequest, "There is no such action: %v", keys(body))
		return
	}
	sv.Updated = time.Now().UTC()
	w.WriteHeader(http.StatusAccepted)
}

func has(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

type novaCreateReq struct {
	Server struct {
		Name      string            `json:"name"`
		FlavorRef string            `json:"flavorRef"`
		ImageRef  string            `json:"imageRef"`
		AZ        string            `json:"availability_zone"`
		Metadata  map[string]string `json:"metadata"`
		KeyName   string            `json:"key_name"`
		UserData  string            `json:"user_data"`
		AccessV4  string            `json:"accessIPv4"`
		AccessV6  string            `json:"accessIPv6"`
		Networks  any               `json:"networks"`
	} `json:"server"`
}

func (s *Sim) novaCreateServer(w http.ResponseWriter, r *http.Request) {
	var req novaCreateReq
	if err := decodeBody(r, &req); err != nil {
		novaError(w, http.StatusBadRequest, "%v", err)
		return
	}
	t := tokenFrom(r)
	sp := ServerSpec{Name: req.Server.Name, Flavor: req.Server.FlavorRef, Image: req.Server.ImageRef, AZ: req.Server.AZ, Metadata: req.Server.Metadata,
		KeyName: req.Server.KeyName, UserData: req.Server.UserData, AccessIPv4: req.Server.AccessV4,
		AccessIPv6: req.Server.AccessV6, Status: "BUILD"}
	if t.Project != nil {
		sp.Project = t.Project.ID
	}
	if nets, ok := req.Server.Networks.([]any); ok {
		for _, n := range nets {
			m, _ := n.(map[string]any)
			id, _ := m["uuid"].(string)
			ip, _ := m["fixed_ip"].(string)
			sp.NICs = append(sp.NICs, NICSpec{Network: id, FixedIP: ip})
		}
	}
	s.mu.Lock()
	for _, nic := range sp.NICs {
		// Nova boots only on networks the project may use.
		if n := s.state.networkRef(nic.Network); n != nil && !canRead(r, n.ProjectID) && !n.Shared {
			s.mu.Unlock()
			novaError(w, http.StatusBadRequest, "Network %s could not be found.", nic.Network)
			return
		}
	}
	if err := s.checkSpecLocked(sp); err != nil {
		s.mu.Unlock()
		novaError(w, http.StatusBadRequest, "%v", err)
		return
	}
	sv, err := s.state.createServer(sp)
	s.mu.Unlock()
	if err != nil {
		code := statusFor(err)
		if code == http.StatusNotFound {
			code = http.StatusBadRequest // Nova: a missing image or flavor is a bad request
		}
		novaError(w, code, "%v", err)
		return
	}
	id := sv.ID
	time.AfterFunc(s.opts.BuildDelay, func() { _ = s.finishBuild(id) })
	writeJSON(w, http.StatusAccepted, map[string]any{"server": map[string]any{
		"id": id, "links": s.serverLinks(baseURL(r), id), "OS-DCF:diskConfig": "MANUAL",
		"security_groups": []any{map[string]any{"name": "default"}}, "adminPass": "cloudsim",
	}})
}

func (s *Sim) finishBuild(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sv, ok := s.state.servers.get(id); ok && sv.Status == "BUILD" {
		sv.Status = "ACTIVE"
		sv.Launched = time.Now().UTC()
		sv.Updated = sv.Launched
	}
	return nil
}

// statusFor maps state errors to HTTP status codes.
func statusFor(err error) int {
	switch {
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrConflict), errors.Is(err, ErrExhausted):
		return http.StatusConflict
	default:
		return http.StatusBadRequest
	}
}

func (s *Sim) listInterfaces(w http.ResponseWriter, _ *http.Request, st *state, sv *server) {
	out := []any{}
	for _, p := range st.serverPorts(sv) {
		out = append(out, s.interfaceView(p))
	}
	writeJSON(w, http.StatusOK, map[string]any{"interfaceAttachments": out})
}

func (s *Sim) getInterface(w http.ResponseWriter, r *http.Request, st *state, sv *server) {
	for _, p := range st.serverPorts(sv) {
		if p.ID == r.PathValue("port") {
			writeJSON(w, http.StatusOK, map[string]any{"interfaceAttachment": s.interfaceView(p)})
			return
		}
	}
	novaError(w, http.StatusNotFound, "Instance %s is not attached.", sv.ID)
}

type attachReq struct {
	A struct {
		NetID    string `json:"net_id"`
		PortID   string `json:"port_id"`
		FixedIPs []struct {
			IP string `json:"ip_address"`
		} `json:"fixed_ips"`
	} `json:"interfaceAttachment"`
}

func (s *Sim) attachInterface(w http.ResponseWriter, r *http.Request, st *state, sv *server, req *attachReq) {
	var p *port
	if req.A.PortID != "" {
		pp, ok := st.ports.get(req.A.PortID)
		if !ok || !canWrite(r, pp.ProjectID) {
			novaError(w, http.StatusNotFound, "Port %s could not be found.", req.A.PortID)
			return
		}
		if pp.DeviceID != "" {
			novaError(w, http.StatusConflict, "Port %s is still in use.", pp.ID)
			return
		}
		st.setPortDevice(pp, sv.ID)
		pp.DeviceOwner, pp.Status = "compute:"+sv.AZ, "ACTIVE"
		p = pp
	} else {
		nic := NICSpec{Network: req.A.NetID}
		if len(req.A.FixedIPs) > 0 {
			nic.FixedIP = req.A.FixedIPs[0].IP
		}
		if err := st.addNIC(sv, nic); err != nil {
			novaError(w, statusFor(err), "%v", err)
			return
		}
		ids := st.portsByDev[sv.ID]
		p = st.ports.byID[ids[len(ids)-1]]
	}
	sv.Updated = time.Now().UTC()
	writeJSON(w, http.StatusOK, map[string]any{"interfaceAttachment": s.interfaceView(p)})
}

func (s *Sim) detachInterface(w http.ResponseWriter, r *http.Request, st *state, sv *server) {
	for _, p := range st.serverPorts(sv) {
		if p.ID == r.PathValue("port") {
			st.deletePort(p.ID)
			sv.Updated = time.Now().UTC()
			w.WriteHeader(http.StatusAccepted)
			return
		}
	}
	novaError(w, http.StatusNotFound, "Port %s is not attached", r.PathValue("port"))
}

func (s *Sim) listFlavors(detail bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.RLock()
		defer s.mu.RUnlock()
		out := []any{}
		for _, fl := range s.state.flavors.all() {
			out = append(out, s.flavorView(fl, baseURL(r), mvOf(r), detail))
		}
		writeJSON(w, http.StatusOK, map[string]any{"flavors": out})
	}
}

// flavorRes is Nova's flavors for the kit: public, owned by no project.
var flavorRes = &resource[flavor]{service: ServiceCompute, one: "flavor", many: "flavors", action: "flavor",
	store: func(st *state) *coll[flavor] { return st.flavors }, owner: func(*flavor) string { return "" },
	notFound: func(id string) error { return apiErr(http.StatusNotFound, "", "Flavor %s could not be found.", id) }}

func (s *Sim) getFlavor(w http.ResponseWriter, r *http.Request, _ *state, fl *flavor) {
	writeJSON(w, http.StatusOK, map[string]any{"flavor": s.flavorView(fl, baseURL(r), mvOf(r), true)})
}

// flavorExtraSpecs answers os-extra_specs: all of a flavor's, or one key.
func (s *Sim) flavorExtraSpecs(w http.ResponseWriter, r *http.Request, _ *state, fl *flavor) {
	specs := maps.Clone(fl.ExtraSpecs)
	if specs == nil {
		specs = map[string]string{}
	}
	key := r.PathValue("key")
	if key == "" {
		writeJSON(w, http.StatusOK, map[string]any{"extra_specs": specs})
		return
	}
	v, ok := specs[key]
	if !ok {
		novaError(w, http.StatusNotFound, "Flavor %s has no extra specs with key %s.", fl.ID, key)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{key: v})
}

func (s *Sim) listAZs(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	detail := strings.HasSuffix(r.URL.Path, "/detail")
	out := []any{}
	for _, az := range s.state.azs {
		var hosts any
		if detail {
			hosts = map[string]any{"cloudsim-" + az: map[string]any{"nova-compute": map[string]any{
				"available": true, "active": true, "updated_at": fmtTime(time.Now(), isoMicros)}}}
		}
		out = append(out, map[string]any{"zoneName": az, "zoneState": map[string]any{"available": true}, "hosts": hosts})
	}
	writeJSON(w, http.StatusOK, map[string]any{"availabilityZoneInfo": out})
}
