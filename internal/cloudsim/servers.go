package cloudsim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"time"
)

// Server is a snapshot of a simulated Nova server, as the Go API returns it.
type Server struct {
	ID, Name, ProjectID, Status string
	Flavor                      string // flavor name
	AZ                          string
	AccessIPv4, AccessIPv6      string
	Metadata                    map[string]string
	// Addresses are in Nova's order: per port, fixed IPs then floating IPs.
	Addresses []Address
	PortIDs   []string
}

// Address is one entry of a server's Nova "addresses".
type Address struct {
	Network string
	IP      string
	Version int
	Type    string // "fixed" or "floating"
	MAC     string
}

func (st *state) createServer(sp ServerSpec) (*server, error) {
	pr := st.projectRef(sp.Project)
	if pr == nil {
		return nil, fmt.Errorf("project %q: %w", sp.Project, ErrNotFound)
	}
	fl := st.flavorRef(sp.Flavor)
	if fl == nil {
		return nil, fmt.Errorf("flavor %q: %w", sp.Flavor, ErrNotFound)
	}
	var imageID string
	if im := st.imageRef(sp.Image); im != nil {
		imageID = im.ID
	} else if sp.Image != "" {
		return nil, fmt.Errorf("image %q: %w", sp.Image, ErrNotFound)
	}
	az := sp.AZ
	if az == "" {
		az = st.azs[0]
	}
	status := strings.ToUpper(sp.Status)
	if status == "" {
		status = "ACTIVE"
	}
	if sp.ID != "" {
		if _, dup := st.servers.get(sp.ID); dup {
			return nil, fmt.Errorf("server %s exists: %w", sp.ID, ErrConflict)
		}
	}
	now := time.Now().UTC().Truncate(time.Second)
	sv := &server{ID: sp.ID, Name: sp.Name, ProjectID: pr.ID, FlavorID: fl.ID, ImageID: imageID, AZ: az, Status: status,
		KeyName: sp.KeyName, PublicKey: sp.PublicKey, UserData: sp.UserData,
		AccessIPv4: sp.AccessIPv4, AccessIPv6: sp.AccessIPv6, Metadata: maps.Clone(sp.Metadata),
		Created: now, Updated: now}
	if sv.ID == "" {
		sv.ID = newID()
	}
	if sv.Metadata == nil {
		sv.Metadata = map[string]string{}
	}
	for _, u := range st.users.all() {
		if u.ProjectID == pr.ID {
			sv.UserID = u.ID
			break
		}
	}
	h := sha256.Sum224([]byte(pr.ID + az))
	sv.HostID = hex.EncodeToString(h[:])
	if status != "BUILD" {
		sv.Launched = now
	}
	for _, nic := range sp.NICs {
		if err := st.addNIC(sv, nic); err != nil {
			for _, pid := range sv.PortIDs {
				st.deletePort(pid)
			}
			return nil, err
		}
	}
	st.servers.add(sv.ID, sv)
	return sv, nil
}

func (st *state) addNIC(sv *server, nic NICSpec) error {
	nw := st.networkRef(nic.Network)
	if nw == nil {
		return fmt.Errorf("network %q: %w", nic.Network, ErrNotFound)
	}
	ps := portSpec{NetworkID: nw.ID, ProjectID: sv.ProjectID, DeviceID: sv.ID, DeviceOwner: "compute:" + sv.AZ}
	if sg := st.defaultSecGroup(sv.ProjectID); sg != "" {
		ps.SecurityGroups = []string{sg}
	}
	if nic.FixedIP != "" {
		ps.FixedIPs = []fixedIP{{IP: nic.FixedIP}}
	}
	if nic.FixedIPv6 != "" {
		ps.FixedIPs = append(ps.FixedIPs, fixedIP{IP: nic.FixedIPv6})
	}
	p, err := st.createPort(ps)
	if err != nil {
		return err
	}
	sv.PortIDs = append(sv.PortIDs, p.ID)
	if nic.FloatingNetwork != "" || nic.FloatingIP != "" {
		ext := st.externalNetwork(nic.FloatingNetwork)
		if ext == nil {
			return fmt.Errorf("external network %q: %w", nic.FloatingNetwork, ErrNotFound)
		}
		if _, err := st.createFloatingIP(sv.ProjectID, ext.ID, nic.FloatingIP, p.ID, ""); err != nil {
			return err
		}
	}
	return nil
}

// externalNetwork finds an external network by ID or name, or the first one.
func (st *state) externalNetwork(ref string) *network {
	if ref != "" {
		if n := st.networkRef(ref); n != nil && n.External {
			return n
		}
		return nil
	}
	for _, n := range st.networks.all() {
		if n.External {
			return n
		}
	}
	return nil
}

func (st *state) deleteServer(id string) error {
	sv, ok := st.servers.get(id)
	if !ok {
		return fmt.Errorf("server %s: %w", id, ErrNotFound)
	}
	for _, pid := range append([]string(nil), st.portsByDev[sv.ID]...) {
		// A trunk on the server's port goes with it (simulator-differences.md).
		if t := st.trunkOfParent(pid); t != nil {
			st.dropTrunk(t)
		}
		st.deletePort(pid)
	}
	st.servers.del(id)
	return nil
}

// serverPorts returns the server's ports in attachment order.
func (st *state) serverPorts(sv *server) []*port {
	var out []*port
	for _, pid := range st.portsByDev[sv.ID] {
		if p, ok := st.ports.get(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// floatingByPort returns floating IPs associated with a port.
func (st *state) floatingByPort(portID string) []*floatingIP {
	var out []*floatingIP
	for _, f := range st.fips.all() {
		if f.PortID == portID {
			out = append(out, f)
		}
	}
	return out
}

// addresses derives Nova's view of a server's addresses from Neutron.
func (st *state) addresses(sv *server, fipIndex map[string][]*floatingIP) []Address {
	var out []Address
	for _, p := range st.serverPorts(sv) {
		nw := st.networks.byID[p.NetworkID]
		for _, f := range p.FixedIPs {
			out = append(out, Address{Network: nw.Name, IP: f.IP, Version: ipVersion(f.IP), Type: "fixed", MAC: p.MAC})
		}
		var fl []*floatingIP
		if fipIndex != nil {
			fl = fipIndex[p.ID]
		} else {
			fl = st.floatingByPort(p.ID)
		}
		for _, f := range fl {
			out = append(out, Address{Network: nw.Name, IP: f.IP, Version: ipVersion(f.IP), Type: "floating", MAC: p.MAC})
		}
	}
	return out
}

// fipIndex maps port IDs to floating IPs, built once per list request.
func (st *state) fipIndex() map[string][]*floatingIP {
	idx := map[string][]*floatingIP{}
	for _, f := range st.fips.all() {
		if f.PortID != "" {
			idx[f.PortID] = append(idx[f.PortID], f)
		}
	}
	return idx
}

func ipVersion(s string) int {
	if a, err := netip.ParseAddr(s); err == nil && a.Is6() && !a.Is4In6() {
		return 6
	}
	return 4
}

func (st *state) snapshot(sv *server) Server { return st.snapshotWith(sv, nil) }

// snapshotWith uses a floating IP index when snapshotting many servers.
func (st *state) snapshotWith(sv *server, fips map[string][]*floatingIP) Server {
	out := Server{ID: sv.ID, Name: sv.Name, ProjectID: sv.ProjectID, Status: sv.Status, AZ: sv.AZ,
		AccessIPv4: sv.AccessIPv4, AccessIPv6: sv.AccessIPv6, Metadata: maps.Clone(sv.Metadata),
		Addresses: st.addresses(sv, fips)}
	if fl, ok := st.flavors.get(sv.FlavorID); ok {
		out.Flavor = fl.Name
	}
	for _, p := range st.serverPorts(sv) {
		out.PortIDs = append(out.PortIDs, p.ID)
	}
	return out
}

// CreateServer adds a server (with its ports and floating IPs) at run time.
func (s *Sim) CreateServer(spec ServerSpec) (Server, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkSpecLocked(spec); err != nil {
		return Server{}, err
	}
	sv, err := s.state.createServer(spec)
	if err != nil {
		return Server{}, fmt.Errorf("create server %q: %w", spec.Name, err)
	}
	return s.state.snapshot(sv), nil
}

func (s *Sim) checkSpecLocked(spec ServerSpec) error {
	st := s.state
	projects, flavors, azs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, p := range st.projects.all() {
		projects[p.Name], projects[p.ID] = true, true
	}
	for _, f := range st.flavors.all() {
		flavors[f.Name], flavors[f.ID] = true, true
	}
	for _, a := range st.azs {
		azs[a] = true
	}
	nets := map[string]SeedNetwork{}
	for _, n := range st.networks.all() {
		sn := SeedNetwork{Name: n.Name, External: n.External}
		for _, id := range n.SubnetIDs {
			sn.Subnets = append(sn.Subnets, SeedSubnet{CIDR: st.subnets.byID[id].CIDR})
		}
		nets[n.Name], nets[n.ID] = sn, sn
	}
	var msgs []string
	for _, p := range validateServerSpec(spec, projects, flavors, azs, nets) {
		msgs = append(msgs, p.field+": "+p.msg)
	}
	if len(msgs) > 0 {
		return fmt.Errorf("server spec %q: %s: %w", spec.Name, strings.Join(msgs, "; "), ErrInvalid)
	}
	return nil
}

// DeleteServer deletes a server and its ports; Nova then answers 404.
func (s *Sim) DeleteServer(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.deleteServer(id)
}

// SetServerStatus changes a server's status (ACTIVE, SHUTOFF, ERROR, ...).
func (s *Sim) SetServerStatus(id, status string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, ok := s.state.servers.get(id)
	if !ok {
		return fmt.Errorf("server %s: %w", id, ErrNotFound)
	}
	sv.Status = strings.ToUpper(status)
	sv.Updated = time.Now().UTC()
	if sv.Status == "ACTIVE" && sv.Launched.IsZero() {
		sv.Launched = sv.Updated
	}
	return nil
}

// ServerByName returns the first server with that name.
func (s *Sim) ServerByName(name string) (Server, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, sv := range s.state.servers.all() {
		if sv.Name == name {
			return s.state.snapshot(sv), true
		}
	}
	return Server{}, false
}

// GetServer returns a server by ID.
func (s *Sim) GetServer(id string) (Server, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sv, ok := s.state.servers.get(id)
	if !ok {
		return Server{}, false
	}
	return s.state.snapshot(sv), true
}

// AttachFloatingIP allocates a floating IP on the external network (name or
// ID; the first external network when empty) and associates it with the
// server's first port.
func (s *Sim) AttachFloatingIP(serverID, network string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, ok := s.state.servers.get(serverID)
	if !ok {
		return "", fmt.Errorf("server %s: %w", serverID, ErrNotFound)
	}
	ports := s.state.serverPorts(sv)
	if len(ports) == 0 {
		return "", fmt.Errorf("server %s has no port: %w", serverID, ErrInvalid)
	}
	ext := s.state.externalNetwork(network)
	if ext == nil {
		return "", fmt.Errorf("external network %q: %w", network, ErrNotFound)
	}
	f, err := s.state.createFloatingIP(sv.ProjectID, ext.ID, "", ports[0].ID, "")
	if err != nil {
		return "", fmt.Errorf("attach floating IP to %s: %w", serverID, err)
	}
	return f.IP, nil
}

// DetachFloatingIP disassociates and releases a floating IP of the server.
func (s *Sim) DetachFloatingIP(serverID, ip string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, ok := s.state.servers.get(serverID)
	if !ok {
		return fmt.Errorf("server %s: %w", serverID, ErrNotFound)
	}
	for _, p := range s.state.serverPorts(sv) {
		for _, f := range s.state.floatingByPort(p.ID) {
			if f.IP == ip {
				s.state.deleteFloatingIP(f.ID)
				return nil
			}
		}
	}
	return fmt.Errorf("floating IP %s on server %s: %w", ip, serverID, ErrNotFound)
}

// AddNIC attaches a new port on network (name or ID) to the server, with
// fixedIP or the next free address.
func (s *Sim) AddNIC(serverID, network, fixedIP string) (Server, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, ok := s.state.servers.get(serverID)
	if !ok {
		return Server{}, fmt.Errorf("server %s: %w", serverID, ErrNotFound)
	}
	if err := s.state.addNIC(sv, NICSpec{Network: network, FixedIP: fixedIP}); err != nil {
		return Server{}, fmt.Errorf("add NIC on %q to %s: %w", network, serverID, err)
	}
	sv.Updated = time.Now().UTC()
	return s.state.snapshot(sv), nil
}

// RemoveNIC detaches and deletes the server's port on network.
func (s *Sim) RemoveNIC(serverID, network string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, ok := s.state.servers.get(serverID)
	if !ok {
		return fmt.Errorf("server %s: %w", serverID, ErrNotFound)
	}
	nw := s.state.networkRef(network)
	for _, p := range s.state.serverPorts(sv) {
		if nw != nil && p.NetworkID == nw.ID {
			s.state.deletePort(p.ID)
			return nil
		}
	}
	return fmt.Errorf("port on %q of server %s: %w", network, serverID, ErrNotFound)
}

// SetServerPortsStatus sets the status of every port of server id (its
// NICs) to status, as Neutron reports them while its backend cannot: an
// OVN northd outage leaves ports DOWN, and a NIC is DOWN until Nova has
// plugged it. "ACTIVE" brings them back. It returns how many ports changed.
func (s *Sim) SetServerPortsStatus(id, status string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.state.servers.get(id); !ok {
		return 0, fmt.Errorf("server %s: %w", id, ErrNotFound)
	}
	n := 0
	now := time.Now().UTC()
	for _, p := range s.state.ports.all() {
		if p.DeviceID == id && p.Status != status {
			p.Status, p.Updated = status, now
			p.Revision++
			n++
		}
	}
	return n, nil
}
