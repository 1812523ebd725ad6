package cloudsim

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"time"
)

// Errors of the Go API (check with errors.Is); the HTTP handlers map them
// to each service's status codes.
var (
	ErrNotFound  = errors.New("not found")
	ErrConflict  = errors.New("conflict")
	ErrInvalid   = errors.New("invalid request")
	ErrExhausted = errors.New("no more IP addresses available")
)

func (st *state) addNetwork(n SeedNetwork) (*network, error) {
	pr := st.projectRef(n.Project)
	nw := &network{ID: n.ID, Name: n.Name, External: n.External, MTU: n.MTU, Created: time.Now()}
	if nw.ID == "" {
		nw.ID = newID()
	}
	if pr != nil {
		nw.ProjectID = pr.ID
	}
	if nw.MTU == 0 {
		nw.MTU = 1500
	}
	st.networks.add(nw.ID, nw)
	for _, s := range n.Subnets {
		if _, err := st.addSubnet(nw, s); err != nil {
			return nil, err
		}
	}
	return nw, nil
}

func (st *state) addSubnet(nw *network, s SeedSubnet) (*subnet, error) {
	pf, err := netip.ParsePrefix(s.CIDR)
	if err != nil {
		return nil, fmt.Errorf("subnet %q: %w", s.CIDR, ErrInvalid)
	}
	pf = pf.Masked()
	sn := &subnet{ID: s.ID, Name: s.Name, NetworkID: nw.ID, ProjectID: nw.ProjectID, CIDR: pf.String(),
		prefix: pf, used: map[netip.Addr]bool{}, Created: time.Now(), IPVersion: 4, Tags: slices.Clone(s.Tags)}
	if !pf.Addr().Is4() {
		sn.IPVersion = 6
	}
	if sn.ID == "" {
		sn.ID = newID()
	}
	gw := pf.Addr().Next()
	if s.Gateway != "" {
		if gw, err = netip.ParseAddr(s.Gateway); err != nil {
			return nil, fmt.Errorf("gateway %q: %w", s.Gateway, ErrInvalid)
		}
	}
	sn.Gateway = gw.String()
	sn.used[gw] = true
	sn.next = pf.Addr().Next()
	st.subnets.add(sn.ID, sn)
	nw.SubnetIDs = append(nw.SubnetIDs, sn.ID)
	return sn, nil
}

// allocate hands out the next free address of the subnet. The hint makes a
// run of allocations linear; after deletions it wraps around once.
func (sn *subnet) allocate() (netip.Addr, error) {
	a := sn.next
	wrapped := false
	for {
		a = a.Next()
		if !a.IsValid() || !sn.prefix.Contains(a) || isBroadcast(sn.prefix, a) {
			if wrapped {
				return netip.Addr{}, fmt.Errorf("subnet %s: %w", sn.CIDR, ErrExhausted)
			}
			wrapped = true
			a = sn.prefix.Addr()
			continue
		}
		if !sn.used[a] {
			sn.used[a] = true
			sn.next = a
			return a, nil
		}
	}
}

func isBroadcast(pf netip.Prefix, a netip.Addr) bool {
	if !a.Is4() {
		return false
	}
	b := a.As4()
	host := 32 - pf.Bits()
	if host <= 1 {
		return false
	}
	for i := 0; i < host; i++ {
		if b[3-i/8]&(1<<(i%8)) == 0 {
			return false
		}
	}
	return true
}

// subnetFor returns the network's subnet containing ip, or (ip invalid) the
// first subnet of the wanted IP version (4 first).
func (st *state) subnetFor(nw *network, ip netip.Addr) *subnet {
	for _, id := range nw.SubnetIDs {
		sn := st.subnets.byID[id]
		if ip.IsValid() && sn.prefix.Contains(ip) {
			return sn
		}
		if !ip.IsValid() && sn.IPVersion == 4 {
			return sn
		}
	}
	if !ip.IsValid() && len(nw.SubnetIDs) > 0 {
		return st.subnets.byID[nw.SubnetIDs[0]]
	}
	return nil
}

// portSpec is what creating a port needs, from any of the APIs.
type portSpec struct {
	Name, NetworkID, ProjectID, DeviceID, DeviceOwner string
	FixedIPs                                          []fixedIP // IP or SubnetID may be empty
	NoFixedIP                                         bool
	SecurityGroups                                    []string
	AllowedPairs                                      []addrPair
}

func (st *state) createPort(ps portSpec) (*port, error) {
	nw, ok := st.networks.get(ps.NetworkID)
	if !ok {
		return nil, fmt.Errorf("network %s: %w", ps.NetworkID, ErrNotFound)
	}
	now := time.Now()
	p := &port{ID: newID(), Name: ps.Name, NetworkID: nw.ID, ProjectID: ps.ProjectID, DeviceID: ps.DeviceID,
		DeviceOwner: ps.DeviceOwner, MAC: st.nextMAC(), Status: "DOWN", AdminUp: true, Created: now, Updated: now,
		SecurityGroups: ps.SecurityGroups, AllowedPairs: ps.AllowedPairs, Revision: 1}
	if p.DeviceID != "" {
		p.Status = "ACTIVE"
	}
	want := ps.FixedIPs
	if len(want) == 0 && !ps.NoFixedIP {
		// Like Neutron on a dual-stack network: an address from the first
		// IPv4 subnet and one from the first IPv6 subnet.
		seen := map[int]bool{}
		for _, id := range nw.SubnetIDs {
			if sn := st.subnets.byID[id]; !seen[sn.IPVersion] {
				seen[sn.IPVersion] = true
				want = append(want, fixedIP{SubnetID: sn.ID})
			}
		}
	}
	for _, w := range want {
		fip, err := st.claimIP(nw, w)
		if err != nil {
			st.releaseIPs(p)
			return nil, err
		}
		p.FixedIPs = append(p.FixedIPs, fip)
	}
	st.ports.add(p.ID, p)
	if p.DeviceID != "" {
		st.portsByDev[p.DeviceID] = append(st.portsByDev[p.DeviceID], p.ID)
	}
	return p, nil
}

func (st *state) claimIP(nw *network, w fixedIP) (fixedIP, error) {
	var ip netip.Addr
	if w.IP != "" {
		var err error
		if ip, err = netip.ParseAddr(w.IP); err != nil {
			return fixedIP{}, fmt.Errorf("invalid IP address %q: %w", w.IP, ErrInvalid)
		}
	}
	var sn *subnet
	if w.SubnetID != "" {
		s, ok := st.subnets.get(w.SubnetID)
		if !ok || s.NetworkID != nw.ID {
			return fixedIP{}, fmt.Errorf("subnet %s on network %s: %w", w.SubnetID, nw.ID, ErrNotFound)
		}
		sn = s
	} else {
		sn = st.subnetFor(nw, ip)
	}
	if sn == nil {
		return fixedIP{}, fmt.Errorf("no subnet of network %s holds %q: %w", nw.ID, w.IP, ErrInvalid)
	}
	if ip.IsValid() {
		if !sn.prefix.Contains(ip) {
			return fixedIP{}, fmt.Errorf("IP %s is not in subnet %s: %w", ip, sn.CIDR, ErrInvalid)
		}
		if sn.used[ip] {
			return fixedIP{}, fmt.Errorf("IP address %s already allocated in subnet %s: %w", ip, sn.ID, ErrConflict)
		}
		sn.used[ip] = true
		return fixedIP{SubnetID: sn.ID, IP: ip.String()}, nil
	}
	a, err := sn.allocate()
	if err != nil {
		return fixedIP{}, err
	}
	return fixedIP{SubnetID: sn.ID, IP: a.String()}, nil
}

func (st *state) releaseIPs(p *port) {
	for _, f := range p.FixedIPs {
		if sn, ok := st.subnets.get(f.SubnetID); ok {
			if a, err := netip.ParseAddr(f.IP); err == nil {
				delete(sn.used, a)
			}
		}
	}
	p.FixedIPs = nil
}

// deletePort removes a port, its addresses and its floating IP associations.
func (st *state) deletePort(id string) {
	p, ok := st.ports.get(id)
	if !ok {
		return
	}
	st.releaseIPs(p)
	st.setPortDevice(p, "")
	for _, f := range st.fips.all() {
		if f.PortID == id {
			f.PortID, f.FixedIP, f.RouterID = "", "", ""
			f.Updated = time.Now()
		}
	}
	st.ports.del(id)
}

// setPortDevice moves a port to another device, keeping the device index.
func (st *state) setPortDevice(p *port, deviceID string) {
	if p.DeviceID != "" {
		ids := st.portsByDev[p.DeviceID]
		for i, x := range ids {
			if x == p.ID {
				ids = append(ids[:i:i], ids[i+1:]...)
				break
			}
		}
		if len(ids) == 0 {
			delete(st.portsByDev, p.DeviceID)
		} else {
			st.portsByDev[p.DeviceID] = ids
		}
	}
	p.DeviceID = deviceID
	if deviceID != "" {
		st.portsByDev[deviceID] = append(st.portsByDev[deviceID], p.ID)
	}
}

// createFloatingIP allocates an address on an external network and
// optionally associates it with a port (its first IPv4 fixed IP).
func (st *state) createFloatingIP(projectID, networkID, addr, portID, fixed string) (*floatingIP, error) {
	return st.createFloatingIPOn(projectID, networkID, "", addr, portID, fixed)
}

// createFloatingIPOn allocates on one subnet of the external network when
// subnetID is set (Neutron's subnet_id), else on any.
func (st *state) createFloatingIPOn(projectID, networkID, subnetID, addr, portID, fixed string) (*floatingIP, error) {
	nw, ok := st.networks.get(networkID)
	if !ok {
		return nil, fmt.Errorf("external network %s: %w", networkID, ErrNotFound)
	}
	if !nw.External {
		return nil, fmt.Errorf("network %s is not external: %w", networkID, ErrInvalid)
	}
	fi, err := st.claimIP(nw, fixedIP{IP: addr, SubnetID: subnetID})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	f := &floatingIP{ID: newID(), ProjectID: projectID, NetworkID: nw.ID, IP: fi.IP, Created: now, Updated: now, Revision: 1}
	st.fips.add(f.ID, f)
	if portID != "" {
		if err := st.associateFIP(f, portID, fixed); err != nil {
			st.deleteFloatingIP(f.ID)
			return nil, err
		}
	}
	return f, nil
}

func (st *state) associateFIP(f *floatingIP, portID, fixed string) error {
	if portID == "" {
		f.PortID, f.FixedIP, f.RouterID = "", "", ""
		f.Updated = time.Now()
		f.Revision++
		return nil
	}
	p, ok := st.ports.get(portID)
	if !ok {
		return fmt.Errorf("port %s: %w", portID, ErrNotFound)
	}
	if fixed == "" {
		for _, x := range p.FixedIPs {
			if a, err := netip.ParseAddr(x.IP); err == nil && a.Is4() {
				fixed = x.IP
				break
			}
		}
	}
	if fixed == "" {
		return fmt.Errorf("port %s has no IPv4 fixed IP: %w", portID, ErrInvalid)
	}
	for _, o := range st.fips.all() {
		if o.ID != f.ID && o.PortID == p.ID && o.FixedIP == fixed && o.NetworkID == f.NetworkID {
			return apiErr(http.StatusConflict, "FloatingIPPortAlreadyAssociated",
				"Cannot associate floating IP %s (%s) with port %s using fixed IP %s, as that fixed IP already has a floating IP on external network %s.",
				f.IP, f.ID, p.ID, fixed, f.NetworkID)
		}
	}
	f.PortID, f.FixedIP = p.ID, fixed
	f.RouterID = st.routerFor(f.NetworkID)
	f.Updated = time.Now()
	f.Revision++
	return nil
}

func (st *state) routerFor(extNetID string) string {
	for _, r := range st.routers.all() {
		if r.GatewayNetID == extNetID {
			return r.ID
		}
	}
	return ""
}

func (st *state) deleteFloatingIP(id string) {
	f, ok := st.fips.get(id)
	if !ok {
		return
	}
	if sn := st.subnetFor(st.networks.byID[f.NetworkID], mustAddr(f.IP)); sn != nil {
		delete(sn.used, mustAddr(f.IP))
	}
	st.fips.del(id)
}

func mustAddr(s string) netip.Addr {
	a, _ := netip.ParseAddr(s)
	return a
}
