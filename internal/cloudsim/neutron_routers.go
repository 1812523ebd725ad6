package cloudsim

import (
	"net/http"
)

// Neutron router creation, deletion and interfaces, so that clients can
// build their own topology instead of relying on the seed's router.

func (s *Sim) createRouterAPI(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Router struct {
			Name string `json:"name"`
			GW   *struct {
				NetworkID string `json:"network_id"`
			} `json:"external_gateway_info"`
		} `json:"router"`
	}
	if err := decodeBody(r, &req); err != nil {
		neutronError(w, http.StatusBadRequest, "BadRequest", "%v", err)
		return
	}
	ext := ""
	if req.Router.GW != nil {
		ext = req.Router.GW.NetworkID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rt, err := s.state.createRouter("", req.Router.Name, projectOf(r), ext)
	if err != nil {
		neutronError(w, statusFor(err), "ExternalNetworkNotFound", "%v", err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"router": s.routerView(rt)})
}

// removeRouter deletes a router without interfaces, with its gateway port.
func removeRouter(st *state, rt *router) error {
	if len(st.routerInterfaces(rt)) > 0 {
		return apiErr(http.StatusConflict, "RouterInUse", "Router %s still has ports", rt.ID)
	}
	for _, pid := range append([]string(nil), st.portsByDev[rt.ID]...) {
		st.deletePort(pid)
	}
	for _, f := range st.fips.all() {
		if f.RouterID == rt.ID {
			f.RouterID = ""
		}
	}
	st.routers.del(rt.ID)
	return nil
}

// routerInterface implements add_router_interface/remove_router_interface
// by subnet_id or port_id.
func (s *Sim) routerInterface(add bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			SubnetID string `json:"subnet_id"`
			PortID   string `json:"port_id"`
		}
		if err := decodeBody(r, &req); err != nil || (req.SubnetID == "") == (req.PortID == "") {
			neutronError(w, http.StatusBadRequest, "BadRequest", "Bad router request: Either subnet_id or port_id must be specified.")
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		rt := routerRes.find(w, r, s.state, r.PathValue("id"), "update")
		if rt == nil {
			return
		}
		st := s.state
		var p *port
		switch {
		case add && req.SubnetID != "":
			sn := subnetRes.find(w, r, st, req.SubnetID, "")
			if sn == nil {
				return
			}
			var err error
			if p, err = st.attachSubnet(rt, sn); err != nil {
				neutronError(w, statusFor(err), "BadRequest", "%v", err)
				return
			}
		case add:
			pp := portRes.find(w, r, st, req.PortID, "update")
			if pp == nil {
				return
			}
			if pp.DeviceID != "" {
				neutronError(w, http.StatusConflict, "PortInUse", "Port %s is already in use by %s.", pp.ID, pp.DeviceID)
				return
			}
			st.setPortDevice(pp, rt.ID)
			pp.DeviceOwner, pp.Status = "network:router_interface", "ACTIVE"
			p = pp
		default:
			for _, x := range st.routerInterfaces(rt) {
				for _, f := range x.FixedIPs {
					if x.ID == req.PortID || f.SubnetID == req.SubnetID {
						p = x
					}
				}
			}
			if p == nil {
				neutronError(w, http.StatusNotFound, "RouterInterfaceNotFound", "Router %s does not have an interface with id %s%s", rt.ID, req.PortID, req.SubnetID)
				return
			}
		}
		body := map[string]any{"id": rt.ID, "tenant_id": rt.ProjectID, "project_id": rt.ProjectID, "port_id": p.ID,
			"network_id": p.NetworkID}
		var subnets []string
		for _, f := range p.FixedIPs {
			subnets = append(subnets, f.SubnetID)
		}
		if len(subnets) > 0 {
			body["subnet_id"], body["subnet_ids"] = subnets[0], subnets
		}
		if !add {
			if err := st.detachPort(rt, p); err != nil {
				neutronError(w, statusFor(err), "RouterInterfaceInUseByRoute", "%v", err)
				return
			}
		}
		writeJSON(w, http.StatusOK, body)
	}
}
