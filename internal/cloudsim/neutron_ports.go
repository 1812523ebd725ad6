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
	// Bound to a host only once Nova plugged it (ACTIVE); a port that only
	// carries a server's device_id is unbound, as in Neutron.
	host, vif := "", "unbound"
	switch {
	case strings.HasPrefix(p.DeviceOwner, "compute:") && p.Status == "ACTIVE":
		host, vif = "cloudsim-"+strings.TrimPrefix(p.DeviceOwner, "compute:"), "ovs"
	case p.DeviceOwner == "trunk:subport":
		// OVN's trunk driver sets the subport's vif_type, not its host
		// (seen on the real lane: binding:host_id "", vif_type ovs).
		vif = "ovs"
	}
	v := map[string]any{
		"id": p.ID, "name": p.Name, "description": p.Description, "network_id": p.NetworkID,
		"tenant_id": p.ProjectID, "project_id": p.ProjectID, "mac_address": p.MAC, "admin_state_up": p.AdminUp,
		"status": p.Status, "device_id": p.DeviceID, "device_owner": p.DeviceOwner, "fixed_ips": ips,
		"allowed_address_pairs": pairs, "security_groups": sgs, "extra_dhcp_opts": []any{},
		"binding:host_id": host, "binding:vif_type": vif, "binding:vnic_type": "normal",
		"binding:vif_details": map[string]any{"port_filter": true}, "binding:profile": map[string]any{},
		"port_security_enabled": true, "dns_name": "", "dns_assignment": dns, "tags": tags,
		"created_at": neutronTS(p.Created), "updated_at": neutronTS(p.Updated), "revision_number": p.Revision,
	}
	// Only a trunk's parent port has trunk_details (the trunk-details
	// extension).
	if d := s.state.trunkDetails(p); d != nil {
		v["trunk_details"] = d
	}
	return v
}

type portBody struct {
	Port struct {
		NetworkID      string      `json:"network_id"`
		Name           *string     `json:"name"`
		Description    *string     `json:"description"`
		DeviceID       *string     `json:"device_id"`
		DeviceOwner    *string     `json:"device_owner"`
		AdminStateUp   *flexBool   `json:"admin_state_up"`
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

func checkPairs(pairs []addrPair) error {
	for _, ap := range pairs {
		if _, err := netip.ParseAddr(ap.IP); err != nil {
			if _, err := netip.ParsePrefix(ap.IP); err != nil {
				return apiErr(http.StatusBadRequest, "HTTPBadRequest", "Invalid input for ip_address. Reason: '%s' is not a valid IP address.", ap.IP)
			}
		}
	}
	return nil
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
			ps.FixedIPs = append(ps.FixedIPs, fixedIP(f))
		}
	}
	if b.AllowedPairs != nil {
		if err := checkPairs(*b.AllowedPairs); err != nil {
			writeErr(w, ServiceNetwork, err)
			return
		}
		ps.AllowedPairs = *b.AllowedPairs
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A project makes ports on its own, shared and external networks only.
	if networkRes.find(w, r, s.state, b.NetworkID, "") == nil {
		return
	}
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
	// A port made through the API is DOWN whatever device_id it carries:
	// only binding to a host (Nova attaching it, binding:host_id being
	// admin-only) brings it up. Real Neutron (Zed, ML2/OVN) keeps a port a
	// project member creates with a server's device_id DOWN and unbound.
	p.Status = "DOWN"
	if b.Description != nil {
		p.Description = *b.Description
	}
	p.Tags = b.Tags
	writeJSON(w, http.StatusCreated, map[string]any{"port": portRes.render(s, r, p)})
}

// updatePort applies a port update; a failed fixed_ips change leaves the
// port's addresses as they were.
func (s *Sim) updatePort(r *http.Request, st *state, p *port, req *portBody) error {
	if err := ifMatch(r, p.Revision); err != nil {
		return err
	}
	b := req.Port
	if b.AllowedPairs != nil {
		if err := checkPairs(*b.AllowedPairs); err != nil {
			return err
		}
	}
	if b.SecurityGroups != nil {
		// Neutron checks every group before changing anything.
		for _, id := range *b.SecurityGroups {
			if g, ok := st.secGroups.get(id); !ok || (g.ProjectID != p.ProjectID && !isAdmin(r)) {
				return apiErr(http.StatusNotFound, "SecurityGroupNotFound", "Security group %s does not exist", id)
			}
		}
	}
	if b.FixedIPs != nil {
		old := p.FixedIPs
		st.releaseIPs(p)
		nw := st.networks.byID[p.NetworkID]
		for _, f := range *b.FixedIPs {
			got, err := st.claimIP(nw, fixedIP(f))
			if err != nil {
				st.releaseIPs(p)
				for _, o := range old {
					st.subnets.byID[o.SubnetID].used[mustAddr(o.IP)] = true
				}
				p.FixedIPs = old
				return apiErr(statusFor(err), "IpAddressAlreadyAllocated", "%v", err)
			}
			p.FixedIPs = append(p.FixedIPs, got)
		}
	}
	setIf(&p.Name, b.Name)
	setIf(&p.Description, b.Description)
	if b.DeviceID != nil {
		st.setPortDevice(p, *b.DeviceID)
	}
	setIf(&p.DeviceOwner, b.DeviceOwner)
	setBool(&p.AdminUp, b.AdminStateUp)
	setIf(&p.SecurityGroups, b.SecurityGroups)
	setIf(&p.AllowedPairs, b.AllowedPairs)
	if b.Tags != nil {
		p.Tags = b.Tags
	}
	p.Updated = time.Now()
	p.Revision++
	return nil
}

// removePort deletes a port that no router or load balancer owns.
func removePort(st *state, p *port) error {
	if p.DeviceOwner == "network:router_interface" || p.DeviceOwner == "network:router_gateway" ||
		strings.HasPrefix(p.DeviceOwner, "Octavia") {
		return apiErr(http.StatusConflict, "PortInUse", "Port %s cannot be deleted directly via the port API: has device owner %s.", p.ID, p.DeviceOwner)
	}
	if err := st.trunkPortInUse(p); err != nil {
		return err
	}
	st.deletePort(p.ID)
	return nil
}

// redactPortBinding drops the binding fields Neutron's default policy shows
// to admins only (binding:host_id, vif_type, vif_details, profile); the
// owner keeps binding:vnic_type.
func redactPortBinding(r *http.Request, v map[string]any) {
	if isAdmin(r) {
		return
	}
	for _, k := range []string{"binding:host_id", "binding:vif_type", "binding:vif_details", "binding:profile"} {
		delete(v, k)
	}
}
