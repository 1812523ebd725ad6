package cloudsim

import (
	"net/http"
	"net/netip"
)

// A load balancer's VIPs. Octavia (API 2.26) takes, besides the primary
// VIP, "additional_vips": [{"subnet_id", "ip_address"?}], each on another
// subnet of the primary VIP's network, at most one address per subnet.
// Like Octavia's allowed-address-pairs network driver, the simulator puts
// them all on the one VIP port as further fixed IPs, so they are released
// with it when the load balancer goes. They cannot be changed afterwards.

type additionalVIP struct {
	SubnetID  string `json:"subnet_id"`
	IPAddress string `json:"ip_address"`
}

func additionalVIPsView(vips []additionalVIP) []any {
	out := []any{}
	for _, v := range vips {
		out = append(out, map[string]any{"subnet_id": v.SubnetID, "ip_address": v.IPAddress})
	}
	return out
}

// checkVIPPort refuses a vip_port_id as Octavia's API does before any
// provider sees it: a port the caller cannot read is not found (Octavia
// reads it with the caller's token), and a port with a device_id (a
// server's, another load balancer's) is in use. A port that passes stays
// the user's: Octavia neither takes it over nor deletes it with the load
// balancer (ownPort), it only deletes VIP ports it owns.
func (st *state) checkVIPPort(r *http.Request, id string) error {
	p, err := portRes.lookup(r, st, id, "")
	if err != nil {
		return octFail(http.StatusBadRequest, "Port %s not found.", id)
	}
	if p.DeviceID != "" {
		// Octavia's (Zed's) message ends in a space.
		return octFail(http.StatusBadRequest, "Validation failure: Port %s is already used by device %s ", p.ID, p.DeviceID)
	}
	return nil
}

// createVIP makes the LB's VIP port in Neutron, with the additional VIPs'
// fixed IPs after the primary one.
func (st *state) createVIP(lb *lbObj, addr string, extra []additionalVIP) error {
	var nw *network
	var want []fixedIP
	switch {
	case lb.VIPPortID != "":
		if len(extra) > 0 {
			// The simulator does not add addresses to a port the user
			// brought; Stackward never asks for it.
			return octFail(http.StatusBadRequest, "Validation failure: additional_vips with vip_port_id are not supported by the simulator.")
		}
		p, ok := st.ports.get(lb.VIPPortID)
		if !ok {
			return ErrNotFound
		}
		lb.VIPNetworkID = p.NetworkID
		if len(p.FixedIPs) > 0 {
			lb.VIPAddress, lb.VIPSubnetID = p.FixedIPs[0].IP, p.FixedIPs[0].SubnetID
		}
		return nil
	case lb.VIPSubnetID != "":
		sn, ok := st.subnets.get(lb.VIPSubnetID)
		if !ok {
			return ErrNotFound
		}
		nw = st.networks.byID[sn.NetworkID]
		want = []fixedIP{{SubnetID: sn.ID, IP: addr}}
	case lb.VIPNetworkID != "":
		n, ok := st.networks.get(lb.VIPNetworkID)
		if !ok {
			return ErrNotFound
		}
		nw = n
		if addr != "" {
			want = []fixedIP{{IP: addr}}
		} else if sn := st.subnetFor(nw, netip.Addr{}); sn != nil {
			want = []fixedIP{{SubnetID: sn.ID}}
		}
	default:
		return ErrInvalid
	}
	more, err := st.checkAdditionalVIPs(lb.ProjectID, nw, want, extra)
	if err != nil {
		return err
	}
	deviceID, owner := vipPortOwner(lb)
	p, err := st.createPort(portSpec{Name: vipPortName(lb), NetworkID: nw.ID, ProjectID: lb.ProjectID,
		DeviceID: deviceID, DeviceOwner: owner, FixedIPs: append(want, more...)})
	if err != nil {
		return err
	}
	if lb.Provider != providerOVN {
		// Octavia's allowed-address-pairs network driver reserves the VIP
		// port administratively down: the address lives on the amphorae's
		// own ports, so the VIP port itself stays DOWN.
		p.AdminUp, p.Status = false, "DOWN"
	}
	lb.VIPPortID, lb.VIPNetworkID, lb.ownPort = p.ID, nw.ID, true
	if len(p.FixedIPs) > 0 {
		lb.VIPAddress, lb.VIPSubnetID = p.FixedIPs[0].IP, p.FixedIPs[0].SubnetID
	}
	for _, f := range p.FixedIPs[len(want):] {
		lb.AdditionalVIPs = append(lb.AdditionalVIPs, additionalVIP{SubnetID: f.SubnetID, IPAddress: f.IP})
	}
	return nil
}

// checkAdditionalVIPs refuses what Octavia refuses: a missing or unknown
// subnet, one of another project's private network, one of another network
// than the primary VIP's, a subnet used twice (one address per subnet) and
// an address outside its subnet. It returns the fixed IPs to claim.
func (st *state) checkAdditionalVIPs(project string, nw *network, primary []fixedIP, extra []additionalVIP) ([]fixedIP, error) {
	used := map[string]bool{}
	for _, f := range primary {
		sn := st.subnetFor(nw, parseAddr(f.IP))
		if f.SubnetID != "" {
			sn = st.subnets.byID[f.SubnetID]
		}
		if sn != nil {
			used[sn.ID] = true
		}
	}
	var out []fixedIP
	for _, v := range extra {
		if v.SubnetID == "" {
			return nil, octFail(http.StatusBadRequest, "Invalid input for field/attribute additional_vips. Value: '%v'. Mandatory field missing: subnet_id.", v)
		}
		sn, ok := st.subnets.get(v.SubnetID)
		if !ok {
			return nil, octFail(http.StatusBadRequest, "Subnet %s not found.", v.SubnetID)
		}
		owner := st.networks.byID[sn.NetworkID]
		if owner == nil || (owner.ProjectID != project && !owner.Shared && !owner.External) {
			return nil, octFail(http.StatusBadRequest, "Subnet %s not found.", v.SubnetID)
		}
		if sn.NetworkID != nw.ID {
			return nil, octFail(http.StatusBadRequest, "Validation failure: All VIP subnets must belong to the same network.")
		}
		if used[sn.ID] {
			return nil, octFail(http.StatusBadRequest, "Validation failure: Duplicate VIP/additional_vip subnet(s) specified. Only one IP can be bound per subnet.")
		}
		used[sn.ID] = true
		if v.IPAddress != "" {
			a, err := netip.ParseAddr(v.IPAddress)
			if err != nil || !sn.prefix.Contains(a) {
				return nil, octFail(http.StatusBadRequest, "Validation failure: IP address %s is not in subnet %s (%s).", v.IPAddress, sn.ID, sn.CIDR)
			}
		}
		out = append(out, fixedIP{SubnetID: sn.ID, IP: v.IPAddress})
	}
	return out, nil
}

func parseAddr(s string) netip.Addr {
	a, _ := netip.ParseAddr(s)
	return a
}
