package cloudsim

import (
	"net/http"
	"time"
)

// Neutron (network v2.0): networks, subnets, ports and the extension list.
// A server's ports are ordinary Neutron ports, so whatever a client changes
// here (allowed address pairs, new ports) shows up in Nova's addresses.

func (s *Sim) routesNetwork(mux *http.ServeMux) {
	h := s.serviceRoutes(mux, ServiceNetwork, networkPrefix+"/v2.0", nil)
	h("GET /extensions", "extensions.list", s.listExtensions)
	h("GET /extensions/{alias}", "extensions.get", s.getExtension)
	h("GET /availability_zones", "availability_zones.list", s.listNetworkAZs)
	h("GET /networks", "networks.list", networkRes.list(s, nil))
	h("GET /networks/{id}", "networks.get", networkRes.show(s))
	h("POST /networks", "networks.create", s.createNetwork)
	h("DELETE /networks/{id}", "networks.delete", networkRes.remove(s, removeNetwork))
	h("GET /subnets", "subnets.list", subnetRes.list(s, nil))
	h("GET /subnets/{id}", "subnets.get", subnetRes.show(s))
	h("POST /subnets", "subnets.create", s.createSubnet)
	s.routesSubnetTags(h)
	s.routesSecGroupTags(h)
	h("GET /ports", "ports.list", portRes.list(s, portsByDevice))
	h("GET /ports/{id}", "ports.get", portRes.show(s))
	h("POST /ports", "ports.create", s.createPortAPI)
	h("PUT /ports/{id}", "ports.update", updateHandler(s, portRes, s.updatePort))
	h("DELETE /ports/{id}", "ports.delete", portRes.remove(s, removePort))
	s.routesTrunks(h)
	s.routesNetworkL3(mux, h)
}

var neutronExtensions = []struct{ alias, name string }{
	{"router", "Neutron L3 Router"},
	{"ext-gw-mode", "Neutron L3 Configurable external gateway mode"},
	{"extraroute", "Neutron Extra Route"},
	{"extraroute-atomic", "Atomically add/remove extra routes"},
	{"standard-attr-tag", "Tag support for resources with standard attribute: subnet"},
	{"allowed-address-pairs", "Allowed Address Pairs"},
	{"security-group", "security-group"},
	{"external-net", "Neutron external network"},
	{"binding", "Port Binding"},
	{"port-security", "Port Security"},
	{"network-mtu", "Network MTU"},
	{"project-id", "project_id field enabled"},
	{"standard-attr-description", "standard-attr-description"},
	{"standard-attr-revisions", "Resource revision numbers"},
	{"standard-attr-timestamp", "Resource timestamps"},
	{"availability_zone", "Availability Zone"},
	{"trunk", "Trunk Extension"},
	{"trunk-details", "Trunk port details"},
}

func extensionView(alias, name string) map[string]any {
	return map[string]any{"alias": alias, "name": name, "description": name + " (stackward-cloudsim)",
		"links": []any{}, "updated": "2020-01-01T10:00:00-00:00"}
}

func (s *Sim) listExtensions(w http.ResponseWriter, r *http.Request) {
	var out []any
	for _, e := range neutronExtensions {
		out = append(out, extensionView(e.alias, e.name))
	}
	writeJSON(w, http.StatusOK, map[string]any{"extensions": out})
}

func (s *Sim) getExtension(w http.ResponseWriter, r *http.Request) {
	for _, e := range neutronExtensions {
		if e.alias == r.PathValue("alias") {
			writeJSON(w, http.StatusOK, map[string]any{"extension": extensionView(e.alias, e.name)})
			return
		}
	}
	neutronError(w, http.StatusNotFound, "ExtensionNotFound", "Extension with alias %s does not exist", r.PathValue("alias"))
}

// listNetworkAZs answers the availability_zone extension: every AZ serves
// networks and routers.
func (s *Sim) listNetworkAZs(w http.ResponseWriter, r *http.Request) {
	var items []map[string]any
	for _, az := range s.state.azs {
		for _, res := range []string{"network", "router"} {
			items = append(items, map[string]any{"name": az, "resource": res, "state": "available"})
		}
	}
	writeFilteredList(w, r, ServiceNetwork, "availability_zones", items)
}

func neutronTS(t time.Time) string { return fmtTime(t, isoSeconds) }

func (s *Sim) networkView(n *network) map[string]any {
	subnets := append([]string{}, n.SubnetIDs...)
	return map[string]any{
		"id": n.ID, "name": n.Name, "status": "ACTIVE", "subnets": subnets, "admin_state_up": true,
		"tenant_id": n.ProjectID, "project_id": n.ProjectID, "shared": n.Shared, "router:external": n.External,
		"mtu": n.MTU, "port_security_enabled": true, "description": "", "tags": []string{},
		"availability_zone_hints": []string{}, "availability_zones": s.state.azs,
		"ipv4_address_scope": nil, "ipv6_address_scope": nil, "dns_domain": "",
		"provider:network_type": "vxlan", "provider:physical_network": nil, "provider:segmentation_id": 1000 + len(n.ID),
		"created_at": neutronTS(n.Created), "updated_at": neutronTS(n.Created), "revision_number": 1,
	}
}

func (s *Sim) createNetwork(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Network struct {
			Name     string   `json:"name"`
			External flexBool `json:"router:external"`
			Shared   flexBool `json:"shared"`
			MTU      int      `json:"mtu"`
		} `json:"network"`
	}
	if err := decodeBody(r, &req); err != nil {
		neutronError(w, http.StatusBadRequest, "BadRequest", "%v", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.state.addNetwork(SeedNetwork{Name: req.Network.Name, Project: projectOf(r), External: bool(req.Network.External), MTU: req.Network.MTU})
	if err != nil {
		neutronError(w, statusFor(err), "BadRequest", "%v", err)
		return
	}
	n.Shared = bool(req.Network.Shared)
	writeJSON(w, http.StatusCreated, map[string]any{"network": s.networkView(n)})
}

// removeNetwork deletes a network without ports, with its subnets.
func removeNetwork(st *state, n *network) error {
	for _, p := range st.ports.all() {
		if p.NetworkID == n.ID {
			return apiErr(http.StatusConflict, "NetworkInUse", "Unable to complete operation on network %s. There are one or more ports still in use on the network.", n.ID)
		}
	}
	for _, sid := range n.SubnetIDs {
		st.subnets.del(sid)
	}
	st.networks.del(n.ID)
	return nil
}

func (s *Sim) subnetView(sn *subnet) map[string]any {
	first, last := sn.prefix.Addr().Next(), lastAddr(sn)
	var ra, am any
	if sn.IPVersion == 6 {
		ra, am = "slaac", "slaac"
	}
	return map[string]any{
		"id": sn.ID, "name": sn.Name, "network_id": sn.NetworkID, "tenant_id": sn.ProjectID, "project_id": sn.ProjectID,
		"cidr": sn.CIDR, "ip_version": sn.IPVersion, "gateway_ip": sn.Gateway, "enable_dhcp": true,
		"dns_nameservers": []string{}, "host_routes": []any{}, "description": "", "tags": append([]string{}, sn.Tags...),
		"allocation_pools": []any{map[string]any{"start": first.Next().String(), "end": last.String()}},
		"ipv6_ra_mode":     ra, "ipv6_address_mode": am, "subnetpool_id": nil, "service_types": []string{}, "dns_publish_fixed_ip": false,
		"created_at": neutronTS(sn.Created), "updated_at": neutronTS(sn.Created), "revision_number": 1,
	}
}

func (s *Sim) createSubnet(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Subnet struct {
			NetworkID string `json:"network_id"`
			Name      string `json:"name"`
			CIDR      string `json:"cidr"`
			IPVersion int    `json:"ip_version"`
			Gateway   string `json:"gateway_ip"`
		} `json:"subnet"`
	}
	if err := decodeBody(r, &req); err != nil {
		neutronError(w, http.StatusBadRequest, "BadRequest", "%v", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := networkRes.find(w, r, s.state, req.Subnet.NetworkID, "")
	if n == nil {
		return
	}
	if !canWrite(r, n.ProjectID) {
		writeErr(w, ServiceNetwork, forbidden(ServiceNetwork, "create_subnet"))
		return
	}
	sn, err := s.state.addSubnet(n, SeedSubnet{Name: req.Subnet.Name, CIDR: req.Subnet.CIDR, Gateway: req.Subnet.Gateway})
	if err != nil {
		neutronError(w, http.StatusBadRequest, "BadRequest", "Invalid input for operation: %v", err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"subnet": s.subnetView(sn)})
}
