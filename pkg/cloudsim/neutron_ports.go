package cloudsim

import (
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// Neutron ports, including allowed address pairs (the CCM's route
// controller and the approver both read them).

func lastAddr(sn *subnet) netip.Addr {
	b := sn.prefix.Addr().AsSlice()
	bits := sn.prefix.Bits()
	for i := bits; i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	if a.Is4() {
		a = a.Prev()
	}
	return a
}

func (s *Sim) portView(p *port) map[string]any {
	ips := []any{}
	dns := []any{}
	for _, f := range p.FixedIPs {
		ips = append(ips, map[string]any{"subnet_id": f.SubnetID, "ip_address": f.IP})
		host := "host-" + strings.NewReplacer(".", "-", ":", "-").Replace(f.IP)
		dns = append(dns, map[string]any{"hostname": host, "ip_address": f.IP, "fqdn": host + ".openstacklocal."})
	}
	pairs := []any{}
	for _, ap := range p.AllowedPairs {
		mac := ap.MAC
		if mac == "" {
			mac = p.MAC
		}
		pairs = append(pairs, map[string]any{"ip_address": ap.IP, "mac_address": mac})
	}
	sgs := append([]string{}, p.SecurityGroups...)
	tags := append([]string{}, p.Tags...)
	host := ""
	if strings.HasPrefix(p.DeviceOwner, "compute:") {
		host = "cloudsim-" + strings.TrimPrefix(p.DeviceOwner, "compute:")
	}
	return map[string]any{
		"id": p.ID, "name": p.Name, "description": p.Description, "network_id": p.NetworkID,
		"tenant_id": p.ProjectID, "project_id": p.ProjectID, "mac_address": p.MAC, "admin_state_up": p.AdminUp,
		"status": p.Status, "device_id": p.DeviceID, "device_owner": p.DeviceOwner, "fixed_ips": ips,
		"allowed_address_pairs": pairs, "security_groups": sgs, "extra_dhcp_opts": []any{},
		"binding:host_id": host, "binding:vif_type": "ovs", "binding:vnic_type": "normal",
		"binding:vif_details": map[string]any{"port_filter": true}, "binding:profile": map[string]any{},
		"port_security_enabled": true, "dns_name": "", "dns_assignment": dns, "tags": tags,
		"created_at": neutronTS(p.Created), "updated_at": neutronTS(p.Updated), "revision_number": p.Revision,
	}
}

func (s *Sim) listPorts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.RLock()
	st := s.state
	var candidates []*port
	if devs, ok := q["device_id"]; ok {
		// The hot path of a CCM: ports of one server, without a scan.
		for _, d := range devs {
			for _, id := range st.portsByDev[d] {
				candidates = append(candidates, st.ports.byID[id])
			}
		}
	} else {
		candidates = st.ports.all()
	}
	items := visibleViews(r, candidates, portOwner, s.portView)
	s.mu.RUnlock()
	writeNeutronList(w, r, "ports", items)
}

func (s *Sim) portFor(w http.ResponseWriter, r *http.Request) *port {
	return findVisible(w, r, s.state.ports, portOwner, "PortNotFound", "Port %s could not be found.")
}

func portOwner(p *port) string { return p.ProjectID }

func (s *Sim) getPort(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if p := s.portFor(w, r); p != nil {
		writeJSON(w, http.StatusOK, map[string]any{"port": s.portView(p)})
	}
}

type portBody struct {
	Port struct {
		NetworkID      string      `json:"network_id"`
		Name           *string     `json:"name"`
		Description    *string     `json:"description"`
		DeviceID       *string     `json:"device_id"`
		DeviceOwner    *string     `json:"device_owner"`
		AdminStateUp   *bool       `json:"admin_state_up"`
		FixedIPs       *[]fixedIPJ `json:"fixed_ips"`
		SecurityGroups *[]string   `json:"security_groups"`
		AllowedPairs   *[]addrPair `json:"allowed_address_pairs"`
		Tags           []string    `json:"tags"`
	} `json:"port"`
}

type fixedIPJ struct {
	SubnetID string `json:"subnet_id"`
	IP       string `json:"ip_address"`
}

func (s *Sim) checkPairs(w http.ResponseWriter, pairs []addrPair) bool {
	for _, ap := range pairs {
		if _, err := netip.ParseAddr(ap.IP); err != nil {
			if _, err := netip.ParsePrefix(ap.IP); err != nil {
				neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for ip_address. Reason: '%s' is not a valid IP address.", ap.IP)
				return false
			}
		}
	}
	return true
}

func (s *Sim) createPortAPI(w http.ResponseWriter, r *http.Request) {
	var req portBody
	if err := decodeBody(r, &req); err != nil {
		neutronError(w, http.StatusBadRequest, "BadRequest", "%v", err)
		return
	}
	b := req.Port
	ps := portSpec{NetworkID: b.NetworkID, ProjectID: projectOf(r)}
	if b.Name != nil {
		ps.Name = *b.Name
	}
	if b.DeviceID != nil {
		ps.DeviceID = *b.DeviceID
	}
	if b.DeviceOwner != nil {
		ps.DeviceOwner = *b.DeviceOwner
	}
	if b.FixedIPs != nil {
		ps.NoFixedIP = len(*b.FixedIPs) == 0
		for _, f := range *b.FixedIPs {
			ps.FixedIPs = append(ps.FixedIPs, fixedIP{SubnetID: f.SubnetID, IP: f.IP})
		}
	}
	if b.AllowedPairs != nil {
		if !s.checkPairs(w, *b.AllowedPairs) {
			return
		}
		ps.AllowedPairs = *b.AllowedPairs
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.SecurityGroups != nil {
		ps.SecurityGroups = *b.SecurityGroups
	} else {
		ps.SecurityGroups = []string{s.state.defaultSecGroup(ps.ProjectID)}
	}
	p, err := s.state.createPort(ps)
	if err != nil {
		neutronError(w, statusFor(err), "BadRequest", "%v", err)
		return
	}
	if b.Description != nil {
		p.Description = *b.Description
	}
	p.Tags = b.Tags
	writeJSON(w, http.StatusCreated, map[string]any{"port": s.portView(p)})
}

func (s *Sim) updatePort(w http.ResponseWriter, r *http.Request) {
	var req portBody
	if err := decodeBody(r, &req); err != nil {
		neutronError(w, http.StatusBadRequest, "BadRequest", "%v", err)
		return
	}
	b := req.Port
	if b.AllowedPairs != nil && !s.checkPairs(w, *b.AllowedPairs) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.portFor(w, r)
	if p == nil || ifMatchFails(w, r, p.Revision) {
		return
	}
	st := s.state
	if b.FixedIPs != nil {
		old := p.FixedIPs
		st.releaseIPs(p)
		nw := st.networks.byID[p.NetworkID]
		for _, f := range *b.FixedIPs {
			got, err := st.claimIP(nw, fixedIP{SubnetID: f.SubnetID, IP: f.IP})
			if err != nil {
				st.releaseIPs(p)
				for _, o := range old {
					st.subnets.byID[o.SubnetID].used[mustAddr(o.IP)] = true
				}
				p.FixedIPs = old
				neutronError(w, statusFor(err), "IpAddressAlreadyAllocated", "%v", err)
				return
			}
			p.FixedIPs = append(p.FixedIPs, got)
		}
	}
	if b.Name != nil {
		p.Name = *b.Name
	}
	if b.Description != nil {
		p.Description = *b.Description
	}
	if b.DeviceID != nil {
		st.setPortDevice(p, *b.DeviceID)
	}
	if b.DeviceOwner != nil {
		p.DeviceOwner = *b.DeviceOwner
	}
	if b.AdminStateUp != nil {
		p.AdminUp = *b.AdminStateUp
	}
	if b.SecurityGroups != nil {
		p.SecurityGroups = *b.SecurityGroups
	}
	if b.AllowedPairs != nil {
		p.AllowedPairs = *b.AllowedPairs
	}
	if b.Tags != nil {
		p.Tags = b.Tags
	}
	p.Updated = time.Now()
	p.Revision++
	writeJSON(w, http.StatusOK, map[string]any{"port": s.portView(p)})
}

func (s *Sim) deletePortAPI(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.portFor(w, r)
	if p == nil {
		return
	}
	if p.DeviceOwner == "network:router_interface" || p.DeviceOwner == "network:router_gateway" ||
		strings.HasPrefix(p.DeviceOwner, "Octavia") {
		neutronError(w, http.StatusConflict, "PortInUse", "Port %s cannot be deleted directly via the port API: has device owner %s.", p.ID, p.DeviceOwner)
		return
	}
	s.state.deletePort(p.ID)
	w.WriteHeader(http.StatusNoContent)
}
