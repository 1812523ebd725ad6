package cloudsim

import (
	"errors"
	"net/http"
)

// Octavia (load-balancer v2): load balancers and the fully populated
// single-call create. Children are in octavia_children.go, the state
// machine in octavia_state.go.

func (s *Sim) routesLoadBalancer(mux *http.ServeMux) {
	for _, ver := range []string{"/v2", "/v2.0"} {
		p := lbPrefix + ver
		h := s.serviceRoutes(mux, ServiceLoadBalancer, p, nil)
		s.handle(mux, "GET "+p+"/{$}", op{service: ServiceLoadBalancer, name: "version", anonymous: true}, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"version": map[string]any{"id": octaviaMaxVersion, "status": "CURRENT",
				"updated": "2023-02-01T00:00:00Z", "links": []any{link(baseURL(r)+lbPrefix+"/v2/", "self")}}})
		})
		h("GET /lbaas/loadbalancers", "loadbalancers.list", lbRes.list(s, nil))
		h("POST /lbaas/loadbalancers", "loadbalancers.create", s.createLB)
		h("GET /lbaas/loadbalancers/{id}", "loadbalancers.get", lbRes.show(s))
		h("PUT /lbaas/loadbalancers/{id}", "loadbalancers.update", withBody(s, lbRes, "update", s.updateLB))
		h("DELETE /lbaas/loadbalancers/{id}", "loadbalancers.delete", lbRes.with(s, "delete", s.deleteLB))
		h("GET /lbaas/loadbalancers/{id}/status", "loadbalancers.status", lbRes.with(s, "", s.lbStatusTree))
		h("GET /lbaas/loadbalancers/{id}/stats", "loadbalancers.stats", lbRes.with(s, "", s.lbStats))
		h("GET /lbaas/providers", "providers.list", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"providers": providerList()})
		})
		h("GET /lbaas/flavors", "flavors.list", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"flavors": []any{}})
		})
		h("GET /lbaas/availabilityzones", "availabilityzones.list", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"availability_zones": []any{}})
		})
		s.routesLBChildren(h)
	}
}

func octFail(code int, format string, args ...any) error { return apiErr(code, "", format, args...) }

func writeOctErr(w http.ResponseWriter, err error) { writeErr(w, ServiceLoadBalancer, err) }

type lbReq struct {
	LB struct {
		Name         *string   `json:"name"`
		Description  *string   `json:"description"`
		VIPSubnetID  string    `json:"vip_subnet_id"`
		VIPNetworkID string    `json:"vip_network_id"`
		VIPPortID    string    `json:"vip_port_id"`
		VIPAddress   string    `json:"vip_address"`
		Provider     string    `json:"provider"`
		FlavorID     string    `json:"flavor_id"`
		AZ           string    `json:"availability_zone"`
		AdminStateUp *flexBool `json:"admin_state_up"`
		Tags         []string  `json:"tags"`
		// AdditionalVIPs (API 2.26) are further addresses of the VIP
		// port, one per subnet of the primary VIP's network.
		AdditionalVIPs []additionalVIP `json:"additional_vips"`
		Listeners      []listenerReq   `json:"listeners"`
		Pools          []poolReq       `json:"pools"`
	} `json:"loadbalancer"`
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// mutableLB returns the LB if it may be changed now, else a 409 error as
// Octavia words it.
func (s *Sim) mutableLB(id string) (*lbObj, error) {
	lb, ok := s.state.lb.lbs.get(id)
	if !ok {
		return nil, octFail(http.StatusNotFound, "Load Balancer %s not found.", id)
	}
	if lb.Prov != provActive {
		return nil, octFail(http.StatusConflict, "Load Balancer %s is immutable and cannot be updated.", id)
	}
	return lb, nil
}

func (s *Sim) lbStatusTree(w http.ResponseWriter, _ *http.Request, _ *state, lb *lbObj) {
	writeJSON(w, http.StatusOK, s.statusTree(lb))
}

func (s *Sim) createLB(w http.ResponseWriter, r *http.Request) {
	var req lbReq
	if err := decodeBody(r, &req); err != nil {
		octaviaError(w, http.StatusBadRequest, "Invalid input for field/attribute loadbalancer. %v", err)
		return
	}
	b := req.LB
	if b.VIPSubnetID == "" && b.VIPNetworkID == "" && b.VIPPortID == "" {
		octaviaError(w, http.StatusBadRequest, "Validation failure: VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.")
		return
	}
	project := projectOf(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state
	if b.VIPPortID != "" {
		if err := st.checkVIPPort(r, b.VIPPortID); err != nil {
			writeOctErr(w, err)
			return
		}
	}
	if st.lbQuota > 0 {
		n := 0
		for _, lb := range st.lb.lbs.all() {
			if lb.ProjectID == project {
				n++
			}
		}
		if n >= st.lbQuota {
			octaviaError(w, http.StatusForbidden, "Quota has been met for resources: LoadBalancer")
			return
		}
	}
	provider := b.Provider
	if provider == "" {
		provider = providerAmphora
	}
	if !enabledProviders[provider] {
		octaviaError(w, http.StatusBadRequest, "Provider '%s' is not enabled.", provider)
		return
	}
	if err := checkGraphProvider(provider, b.Listeners, b.Pools); err != nil {
		writeOctErr(w, err)
		return
	}
	lb := &lbObj{lbStatus: newStatus(project, "", str(b.Name), str(b.Description), b.AdminStateUp, b.Tags),
		VIPSubnetID: b.VIPSubnetID, VIPNetworkID: b.VIPNetworkID, VIPPortID: b.VIPPortID, Provider: provider,
		FlavorID: b.FlavorID, AZ: b.AZ}
	lb.LBID = lb.ID
	if err := st.createVIP(lb, b.VIPAddress, b.AdditionalVIPs); err != nil {
		var ae *apiError
		switch {
		case errors.As(err, &ae):
			writeOctErr(w, err)
		case errors.Is(err, ErrNotFound):
			octaviaError(w, http.StatusBadRequest, "Validation failure: VIP subnet, network or port not found.")
		default:
			octaviaError(w, statusFor(err), "Validation failure: %v", err)
		}
		return
	}
	st.lb.lbs.add(lb.ID, lb)
	full := len(b.Listeners) > 0 || len(b.Pools) > 0
	var err error
	for i := range b.Listeners {
		if _, err = s.newListener(lb, b.Listeners[i]); err != nil {
			break
		}
	}
	for i := 0; err == nil && i < len(b.Pools); i++ {
		_, err = s.newPool(lb, "", b.Pools[i])
	}
	if err != nil {
		s.removeLB(lb)
		writeOctErr(w, err)
		return
	}
	s.scheduleSettle(lb.ID)
	view := s.lbView(lb)
	if full {
		view = s.fullLBView(lb)
	}
	writeJSON(w, http.StatusCreated, map[string]any{"loadbalancer": view})
}

func (s *Sim) updateLB(w http.ResponseWriter, _ *http.Request, _ *state, lb *lbObj, req *lbReq) {
	if _, err := s.mutableLB(lb.ID); err != nil {
		writeOctErr(w, err)
		return
	}
	b := req.LB
	setIf(&lb.Name, b.Name)
	setIf(&lb.Description, b.Description)
	setBool(&lb.AdminUp, b.AdminStateUp)
	if b.Tags != nil {
		lb.Tags = b.Tags
	}
	lb.mark(provPendingUpdate)
	s.scheduleSettle(lb.ID)
	writeJSON(w, http.StatusOK, map[string]any{"loadbalancer": s.lbView(lb)})
}

func (s *Sim) deleteLB(w http.ResponseWriter, r *http.Request, _ *state, lb *lbObj) {
	cascade, err := queryBool(r.URL.Query(), "cascade")
	if err != nil {
		octaviaError(w, http.StatusBadRequest, "Invalid input for field/attribute cascade. %v", err)
		return
	}
	if lb.Prov != provActive && lb.Prov != provError {
		octaviaError(w, http.StatusConflict, "Invalid state %s of loadbalancer resource %s", lb.Prov, lb.ID)
		return
	}
	children := s.state.lb.statuses(lb.ID)
	if len(children) > 0 && !cascade {
		octaviaError(w, http.StatusBadRequest, "Validation failure: Cannot delete Load Balancer %s - it has children", lb.ID)
		return
	}
	for _, c := range children {
		c.mark(provPendingDelete)
	}
	lb.mark(provPendingDelete)
	s.scheduleSettle(lb.ID)
	w.WriteHeader(http.StatusNoContent)
}

// lbStats answers with zero traffic: the simulator carries none.
func (s *Sim) lbStats(w http.ResponseWriter, _ *http.Request, _ *state, _ *lbObj) {
	writeJSON(w, http.StatusOK, map[string]any{"stats": map[string]any{"active_connections": 0, "bytes_in": 0,
		"bytes_out": 0, "request_errors": 0, "total_connections": 0}})
}
