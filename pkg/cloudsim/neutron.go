package cloudsim

import (
	"net/http"
	"strings"
	"time"
)

// Neutron (network v2.0): networks, subnets, ports and the extension list.
// A server's ports are ordinary Neutron ports, so whatever a client changes
// here (allowed address pairs, new ports) shows up in Nova's addresses.

func (s *Sim) routesNetwork(mux *http.ServeMux) {
	p := networkPrefix + "/v2.0"
	h := func(pattern, name string, fn http.HandlerFunc) {
		method, path, _ := strings.Cut(pattern, " ")
		s.handle(mux, method+" "+p+path, op{service: ServiceNetwork, name: name}, fn)
	}
	h("GET /extensions", "extensions.list", s.listExtensions)
	h("GET /extensions/{alias}", "extensions.get", s.getExtension)
	h("GET /networks", "networks.list", s.listNetworks)
	h("GET /networks/{id}", "networks.get", s.getNetwork)
	h("POST /networks", "networks.create", s.createNetwork)
	h("DELETE /networks/{id}", "networks.delete", s.deleteNetwork)
	h("GET /subnets", "subnets.list", s.listSubnets)
	h("GET /subnets/{id}", "subnets.get", s.getSubnet)
	h("POST /subnets", "subnets.create", s.createSubnet)
	h("GET /ports", "ports.list", s.listPorts)
	h("GET /ports/{id}", "ports.get", s.getPort)
	h("POST /ports", "ports.create", s.createPortAPI)
	h("PUT /ports/{id}", "ports.update", s.updatePort)
	h("DELETE /ports/{id}", "ports.delete", s.deletePortAPI)
	s.routesNetworkL3(mux, h)
}

var neutronExtensions = []struct{ alias, name string }{
	{"router", "Neutron L3 Router"},
	{"ext-gw-mode", "Neutron L3 Configurable external gateway mode"},
	{"extraroute", "Neutron Extra Route"},
	{"extraroute-atomic", "Atomically add/remove extra routes"},
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

func neutronTS(t time.Time) string { return fmtTime(t, isoSeconds) }

// visibleTo mirrors Neutron's policy: a project sees its own resources, and
// everybody sees shared and external networks and unowned resources.
func visibleTo(r *http.Request, owner string) bool {
	return owner == "" || owner == projectOf(r) || r.URL.Query().Get("all_tenants") != ""
}

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

func (s *Sim) listNetworks(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	var items []map[string]any
	for _, n := range s.state.networks.all() {
		if n.External || n.Shared || visibleTo(r, n.ProjectID) {
			items = append(items, s.networkView(n))
		}
	}
	s.mu.RUnlock()
	writeNeutronList(w, r, "networks", items)
}

func (s *Sim) getNetwork(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.state.networks.get(r.PathValue("id"))
	if !ok {
		neutronError(w, http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", r.PathValue("id"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"network": s.networkView(n)})
}

func (s *Sim) createNetwork(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Network struct {
			Name     string `json:"name"`
			External bool   `json:"router:external"`
			Shared   bool   `json:"shared"`
			MTU      int    `json:"mtu"`
		} `json:"network"`
	}
	if err := decodeBody(r, &req); err != nil {
		neutronError(w, http.StatusBadRequest, "BadRequest", "%v", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.state.addNetwork(SeedNetwork{Name: req.Network.Name, Project: projectOf(r), External: req.Network.External, MTU: req.Network.MTU})
	if err != nil {
		neutronError(w, statusFor(err), "BadRequest", "%v", err)
		return
	}
	n.Shared = req.Network.Shared
	writeJSON(w, http.StatusCreated, map[string]any{"network": s.networkView(n)})
}

func (s *Sim) deleteNetwork(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state
	id := r.PathValue("id")
	n, ok := st.networks.get(id)
	if !ok {
		neutronError(w, http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", id)
		return
	}
	for _, p := range st.ports.all() {
		if p.NetworkID == id {
			neutronError(w, http.StatusConflict, "NetworkInUse", "Unable to complete operation on network %s. There are one or more ports still in use on the network.", id)
			return
		}
	}
	for _, sid := range n.SubnetIDs {
		st.subnets.del(sid)
	}
	st.networks.del(id)
	w.WriteHeader(http.StatusNoContent)
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
		"dns_nameservers": []string{}, "host_routes": []any{}, "description": "", "tags": []string{},
		"allocation_pools": []any{map[string]any{"start": first.Next().String(), "end": last.String()}},
		"ipv6_ra_mode":     ra, "ipv6_address_mode": am, "subnetpool_id": nil, "service_types": []string{}, "dns_publish_fixed_ip": false,
		"created_at": neutronTS(sn.Created), "updated_at": neutronTS(sn.Created), "revision_number": 1,
	}
}

func (s *Sim) listSubnets(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	var items []map[string]any
	for _, sn := range s.state.subnets.all() {
		n := s.state.networks.byID[sn.NetworkID]
		if n.External || n.Shared || visibleTo(r, sn.ProjectID) {
			items = append(items, s.subnetView(sn))
		}
	}
	s.mu.RUnlock()
	writeNeutronList(w, r, "subnets", items)
}

func (s *Sim) getSubnet(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sn, ok := s.state.subnets.get(r.PathValue("id"))
	if !ok {
		neutronError(w, http.StatusNotFound, "SubnetNotFound", "Subnet %s could not be found.", r.PathValue("id"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"subnet": s.subnetView(sn)})
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
	n, ok := s.state.networks.get(req.Subnet.NetworkID)
	if !ok {
		neutronError(w, http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", req.Subnet.NetworkID)
		return
	}
	sn, err := s.state.addSubnet(n, SeedSubnet{Name: req.Subnet.Name, CIDR: req.Subnet.CIDR, Gateway: req.Subnet.Gateway})
	if err != nil {
		neutronError(w, http.StatusBadRequest, "BadRequest", "Invalid input for operation: %v", err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"subnet": s.subnetView(sn)})
}
