package cloudsim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"time"
)

// Neutron L3: routers with extra routes (the CCM's route controller uses
// add_extraroutes/remove_extraroutes) and floating IPs.

func (s *Sim) routesNetworkL3(_ *http.ServeMux, h routeFunc) {
	h("GET /routers", "routers.list", routerRes.list(s, nil))
	h("GET /routers/{id}", "routers.get", routerRes.show(s))
	h("PUT /routers/{id}", "routers.update", updateHandler(s, routerRes, s.updateRouter))
	h("POST /routers", "routers.create", s.createRouterAPI)
	h("DELETE /routers/{id}", "routers.delete", routerRes.remove(s, removeRouter))
	h("PUT /routers/{id}/add_router_interface", "routers.add_router_interface", s.routerInterface(true))
	h("PUT /routers/{id}/remove_router_interface", "routers.remove_router_interface", s.routerInterface(false))
	h("PUT /routers/{id}/add_extraroutes", "routers.add_extraroutes", updateHandler(s, routerRes, s.extraRoutes(true)))
	h("PUT /routers/{id}/remove_extraroutes", "routers.remove_extraroutes", updateHandler(s, routerRes, s.extraRoutes(false)))
	h("GET /floatingips", "floatingips.list", fipRes.list(s, nil))
	h("GET /floatingips/{id}", "floatingips.get", fipRes.show(s))
	h("POST /floatingips", "floatingips.create", s.createFIP)
	h("PUT /floatingips/{id}", "floatingips.update", s.updateFIP)
	h("DELETE /floatingips/{id}", "floatingips.delete", fipRes.remove(s, removeFIP))
	s.routesSecGroups(h)
}

func (s *Sim) routerView(rt *router) map[string]any {
	routes := []any{}
	for _, x := range rt.Routes {
		routes = append(routes, map[string]any{"destination": x.Destination, "nexthop": x.NextHop})
	}
	var gw any
	if rt.GatewayNetID != "" {
		gw = map[string]any{"network_id": rt.GatewayNetID, "enable_snat": true, "qos_policy_id": nil, "external_fixed_ips": []any{
			map[string]any{"subnet_id": rt.GatewaySubnetID, "ip_address": rt.GatewayIP}}}
	}
	return map[string]any{
		"id": rt.ID, "name": rt.Name, "description": rt.Description, "status": "ACTIVE", "admin_state_up": true,
		"tenant_id": rt.ProjectID, "project_id": rt.ProjectID, "external_gateway_info": gw, "routes": routes,
		"distributed": false, "ha": false, "availability_zone_hints": []string{}, "availability_zones": s.state.azs,
		"tags": []string{}, "created_at": neutronTS(rt.Created), "updated_at": neutronTS(rt.Updated),
		"revision_number": rt.Revision,
	}
}

type routerBody struct {
	Router struct {
		Name        *string  `json:"name"`
		Description *string  `json:"description"`
		Routes      *[]Route `json:"routes"`
	} `json:"router"`
}

// checkRoutes enforces Neutron's rule that a nexthop must be on a subnet the
// router is attached to.
func checkRoutes(st *state, rt *router, routes []Route) error {
	var attached []netip.Prefix
	for _, pid := range st.portsByDev[rt.ID] {
		for _, f := range st.ports.byID[pid].FixedIPs {
			attached = append(attached, st.subnets.byID[f.SubnetID].prefix)
		}
	}
	for _, x := range routes {
		if _, err := netip.ParsePrefix(x.Destination); err != nil {
			return apiErr(http.StatusBadRequest, "InvalidInput", "Invalid input for routes. Reason: '%s' is not a valid IP subnet.", x.Destination)
		}
		nh, err := netip.ParseAddr(x.NextHop)
		if err != nil {
			return apiErr(http.StatusBadRequest, "InvalidInput", "Invalid input for routes. Reason: '%s' is not a valid IP address.", x.NextHop)
		}
		ok := false
		for _, p := range attached {
			ok = ok || p.Contains(nh)
		}
		if !ok {
			return apiErr(http.StatusBadRequest, "InvalidRoutes", "Invalid format for routes: %s/%s, the nexthop is not connected with router", x.Destination, x.NextHop)
		}
	}
	return nil
}

func (s *Sim) updateRouter(r *http.Request, st *state, rt *router, req *routerBody) error {
	if err := ifMatch(r, rt.Revision); err != nil {
		return err
	}
	if req.Router.Routes != nil {
		if err := checkRoutes(st, rt, *req.Router.Routes); err != nil {
			return err
		}
		rt.Routes = dedupeRoutes(*req.Router.Routes)
	}
	setIf(&rt.Name, req.Router.Name)
	setIf(&rt.Description, req.Router.Description)
	rt.Updated = time.Now()
	rt.Revision++
	return nil
}

func dedupeRoutes(in []Route) []Route {
	seen := map[Route]bool{}
	out := []Route{}
	for _, x := range in {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// extraRoutes implements the atomic add/remove of the extraroute-atomic
// extension: the body lists only the routes to add or remove.
func (s *Sim) extraRoutes(add bool) func(*http.Request, *state, *router, *routerBody) error {
	return func(_ *http.Request, st *state, rt *router, req *routerBody) error {
		if req.Router.Routes == nil {
			return apiErr(http.StatusBadRequest, "BadRequest", "Invalid input: the body needs router.routes")
		}
		if add {
			if err := checkRoutes(st, rt, *req.Router.Routes); err != nil {
				return err
			}
			rt.Routes = dedupeRoutes(append(rt.Routes, *req.Router.Routes...))
		} else {
			drop := map[Route]bool{}
			for _, x := range *req.Router.Routes {
				drop[x] = true
			}
			kept := []Route{}
			for _, x := range rt.Routes {
				if !drop[x] {
					kept = append(kept, x)
				}
			}
			rt.Routes = kept
		}
		rt.Updated = time.Now()
		rt.Revision++
		return nil
	}
}

func (s *Sim) fipView(f *floatingIP) map[string]any {
	status := "DOWN"
	var portID, fixed, routerID any
	if f.PortID != "" {
		status, portID, fixed = "ACTIVE", f.PortID, f.FixedIP
	}
	if f.RouterID != "" {
		routerID = f.RouterID
	}
	return map[string]any{
		"id": f.ID, "floating_ip_address": f.IP, "floating_network_id": f.NetworkID, "router_id": routerID,
		"port_id": portID, "fixed_ip_address": fixed, "status": status, "tenant_id": f.ProjectID,
		"project_id": f.ProjectID, "description": f.Description, "tags": []string{}, "dns_domain": "", "dns_name": "",
		"port_forwardings": []any{}, "qos_policy_id": nil,
		"created_at": neutronTS(f.Created), "updated_at": neutronTS(f.Updated), "revision_number": f.Revision,
	}
}

type fipBody struct {
	FIP struct {
		NetworkID   string  `json:"floating_network_id"`
		SubnetID    string  `json:"subnet_id"`
		Address     string  `json:"floating_ip_address"`
		PortID      *string `json:"port_id"`
		FixedIP     string  `json:"fixed_ip_address"`
		Description *string `json:"description"`
	} `json:"floatingip"`
}

func (s *Sim) createFIP(w http.ResponseWriter, r *http.Request) {
	var req fipBody
	if err := decodeBody(r, &req); err != nil {
		neutronError(w, http.StatusBadRequest, "BadRequest", "%v", err)
		return
	}
	// Neutron's default policy lets only an admin choose the address
	// (create_floatingip:floating_ip_address is admin_only); a project
	// member asking for one is refused in these words (real Zed answer).
	if req.FIP.Address != "" && !isAdmin(r) {
		neutronError(w, http.StatusForbidden, "PolicyNotAuthorized",
			"(rule:create_floatingip and rule:create_floatingip:floating_ip_address) is disallowed by policy")
		return
	}
	portID := ""
	if req.FIP.PortID != nil {
		portID = *req.FIP.PortID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.state.createFloatingIPOn(projectOf(r), req.FIP.NetworkID, req.FIP.SubnetID, req.FIP.Address, portID, req.FIP.FixedIP)
	if err != nil {
		writeErr(w, ServiceNetwork, err)
		return
	}
	if req.FIP.Description != nil {
		f.Description = *req.FIP.Description
	}
	writeJSON(w, http.StatusCreated, map[string]any{"floatingip": s.fipView(f)})
}

func (s *Sim) updateFIP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		neutronError(w, http.StatusBadRequest, "BadRequest", "%v", err)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req fipBody
	if err := decodeBody(r, &req); err != nil {
		neutronError(w, http.StatusBadRequest, "BadRequest", "%v", err)
		return
	}
	// "port_id": null disassociates, as in Neutron (an absent port_id
	// leaves the association alone).
	var present struct {
		FIP map[string]json.RawMessage `json:"floatingip"`
	}
	if json.Unmarshal(body, &present) == nil && string(present.FIP["port_id"]) == "null" {
		none := ""
		req.FIP.PortID = &none
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := fipRes.find(w, r, s.state, r.PathValue("id"), "update")
	if f == nil {
		return
	}
	if req.FIP.PortID != nil {
		if err := s.state.associateFIP(f, *req.FIP.PortID, req.FIP.FixedIP); err != nil {
			writeErr(w, ServiceNetwork, err)
			return
		}
	}
	if req.FIP.Description != nil {
		f.Description = *req.FIP.Description
	}
	writeJSON(w, http.StatusOK, map[string]any{"floatingip": s.fipView(f)})
}

func removeFIP(st *state, f *floatingIP) error {
	st.deleteFloatingIP(f.ID)
	return nil
}
