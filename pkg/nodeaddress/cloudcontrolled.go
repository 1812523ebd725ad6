package nodeaddress

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/openstack"
)

// The approver puts a node's addresses into a certificate that the
// apiserver trusts for that node. For that it may rely only on addresses the
// cloud itself controls, and only on a subset of what For publishes (so the
// CCM and the approver cannot drift). Trusted is that decision, a pure
// function of what the cloud answered, so a batched lookup can feed it the
// same data as a single one.

// CloudView is what the cloud said about one server: the server (Nova),
// the ports whose device_id is the server (Neutron, already filtered by
// project), the floating IPs on those ports, the trunks whose parent is one
// of those ports and their subports (listed by ID), and the networks of
// the ports and subports.
type CloudView struct {
	Server      *openstack.Server
	Ports       []openstack.Port
	FloatingIPs []openstack.FloatingIP
	Trunks      []openstack.Trunk
	Subports    []openstack.Port
	Networks    []openstack.NetworkInfo
}

// TrustOptions are the approver's rules on top of the CCM's Options.
type TrustOptions struct {
	// Options are the CCM's: only what For publishes can be trusted.
	Options
	// ProjectID is the cluster's project: ports, their networks (unless
	// shared by an administrator) and floating IPs must belong to it.
	ProjectID string
	// NetworkIDs, when set, are the only networks whose fixed IPs are
	// trusted. Without them, networks are chosen by the CCM's
	// internal/public network names (when set) and by ownership.
	NetworkIDs []string
	// AllowAccessIPs trusts accessIPv4/v6, which any project member can set.
	AllowAccessIPs bool
	// Forbidden ranges are never trusted, whatever the cloud says.
	Forbidden []Range
}

// Range is a forbidden prefix and what it is, for messages.
type Range struct {
	Prefix netip.Prefix
	What   string // e.g. "the Service CIDR", "the control-plane endpoint"
}

// Trust is the outcome: the trusted IPs, for the IPs that are not trusted
// yet but may become so without anyone acting, why not yet, and for every
// other IP the cloud reported for the server, why it is not trusted.
type Trust struct {
	Trusted []netip.Addr
	// NotReady IPs are on a port of the server that passes every check but
	// its status: not ACTIVE (yet), as while Nova plugs it, or while OVN's
	// northd is down. Such a port may also be one a project member created
	// with the server's device_id, which never becomes ACTIVE: whether the
	// address is the server's cannot be told now, so it is neither trusted
	// nor rejected.
	NotReady  map[netip.Addr]string
	Untrusted map[netip.Addr]string
	// Published is what the CCM publishes for the server (For).
	Published []corev1.NodeAddress
}

// IsTrusted reports whether ip is one of the trusted addresses.
func (t Trust) IsTrusted(ip netip.Addr) bool { return slices.Contains(t.Trusted, ip.Unmap()) }

// Trusted decides which of the server's addresses the approver may put in
// a serving certificate: a fixed IP of one of its ports on a trusted
// network, or a floating IP on such a port, or a fixed IP of a subport of
// a trunk on such a port (subportDistrust); accessIPv4/v6 only when
// allowed; each also published by For and outside every forbidden range.
// An answer it cannot interpret (a network of a port missing, an address
// that is not an IP) is an error: the caller must not decide on it.
func Trusted(v CloudView, opts TrustOptions) (Trust, error) {
	srv := v.Server
	subports, err := Subports(v)
	if err != nil {
		return Trust{}, err
	}
	published, err := For(srv, subports, opts.Options)
	if err != nil {
		return Trust{}, err
	}
	t := Trust{NotReady: map[netip.Addr]string{}, Untrusted: map[netip.Addr]string{}, Published: published}
	inPublished := map[netip.Addr]bool{}
	for _, a := range published {
		if a.Type == corev1.NodeHostName {
			continue
		}
		ip, err := parse(a.Address)
		if err != nil {
			return Trust{}, err
		}
		inPublished[ip] = true
	}
	networks := map[string]openstack.NetworkInfo{}
	for _, n := range v.Networks {
		networks[n.ID] = n
	}

	candidates := map[netip.Addr]string{} // trusted so far → where from
	reject := func(ip netip.Addr, why string) {
		if _, seen := t.Untrusted[ip]; !seen {
			t.Untrusted[ip] = why
		}
	}
	// notReady IPs are decided last: a check that rejects an IP for good
	// (a forbidden range, not published) wins over "not yet".
	notReady := map[netip.Addr]string{}
	trustedPorts := map[string]openstack.Port{}
	notReadyPorts := map[string]string{} // port ID -> why not yet
	for _, p := range v.Ports {
		why, err := portDistrust(p, srv.ID, networks, opts)
		if err != nil {
			return Trust{}, err
		}
		later := ""
		if why == "" {
			later = portNotReady(p)
		}
		for _, f := range p.FixedIPs {
			ip, err := parse(f.IPAddress)
			if err != nil {
				return Trust{}, fmt.Errorf("port %s of server %s: %w", p.ID, srv.ID, err)
			}
			switch {
			case why != "":
				reject(ip, why)
			case later != "":
				notReady[ip] = later
			default:
				candidates[ip] = fmt.Sprintf("a fixed IP of port %s", p.ID)
			}
		}
		switch {
		case why == "" && later == "":
			trustedPorts[p.ID] = p
		case later != "":
			notReadyPorts[p.ID] = later
		}
	}
	for _, sp := range subports {
		why := subportDistrust(sp, trustedPorts, notReadyPorts, opts)
		later := ""
		if why == "" {
			later = subportNotReady(sp, notReadyPorts)
		}
		for _, f := range sp.Port.FixedIPs {
			ip, err := parse(f.IPAddress)
			if err != nil {
				return Trust{}, fmt.Errorf("subport %s of server %s: %w", sp.Port.ID, srv.ID, err)
			}
			if why != "" {
				reject(ip, why)
				continue
			}
			if later != "" {
				if _, direct := candidates[ip]; !direct {
					notReady[ip] = later
				}
				continue
			}
			if _, direct := candidates[ip]; !direct {
				candidates[ip] = fmt.Sprintf("a fixed IP of subport %s (VLAN %d) of trunk %s on port %s", sp.Port.ID, segmentationOf(sp), sp.Trunk.ID, sp.Parent.ID)
			}
		}
	}
	for _, f := range v.FloatingIPs {
		ip, err := parse(f.Address)
		if err != nil {
			return Trust{}, fmt.Errorf("floating IP %s: %w", f.ID, err)
		}
		p, ok := trustedPorts[f.PortID]
		later, portNotReady := notReadyPorts[f.PortID]
		switch {
		case portNotReady && (opts.ProjectID == "" || f.ProjectID == opts.ProjectID):
			notReady[ip] = fmt.Sprintf("floating IP %s is on port %s: %s", f.ID, f.PortID, later)
		case !ok:
			reject(ip, fmt.Sprintf("floating IP %s is on port %q, not on a trusted port of the server", f.ID, f.PortID))
		case opts.ProjectID != "" && f.ProjectID != opts.ProjectID:
			reject(ip, fmt.Sprintf("floating IP %s belongs to project %q, not the cluster's %q", f.ID, f.ProjectID, opts.ProjectID))
		case f.FixedIPAddress != "" && !portHas(p, f.FixedIPAddress):
			reject(ip, fmt.Sprintf("floating IP %s maps to %s, which is not an address of port %s", f.ID, f.FixedIPAddress, p.ID))
		default:
			candidates[ip] = fmt.Sprintf("floating IP %s on port %s", f.ID, p.ID)
		}
	}
	for _, a := range []struct{ field, value string }{{"accessIPv4", srv.AccessIPv4}, {"accessIPv6", srv.AccessIPv6}} {
		if a.value == "" {
			continue
		}
		ip, err := parse(a.value)
		if err != nil {
			return Trust{}, fmt.Errorf("server %s %s: %w", srv.ID, a.field, err)
		}
		if !opts.AllowAccessIPs {
			if _, fromPort := candidates[ip]; !fromPort {
				reject(ip, fmt.Sprintf("%s is the server's %s, a field any project member can set; not trusted without --allow-access-ips", ip, a.field))
			}
			continue
		}
		if _, ok := candidates[ip]; !ok {
			candidates[ip] = a.field
		}
	}

	for ip := range candidates {
		if why, bad := Forbidden(ip, opts.Forbidden); bad {
			reject(ip, why)
			continue
		}
		if !inPublished[ip] {
			reject(ip, fmt.Sprintf("%s (%s) is not an address the CCM publishes with this cloud.conf's [Networking]", ip, candidates[ip]))
			continue
		}
		t.Trusted = append(t.Trusted, ip)
	}
	for ip, why := range notReady {
		if _, rejected := t.Untrusted[ip]; rejected || slices.Contains(t.Trusted, ip) {
			continue
		}
		if bad, forbidden := Forbidden(ip, opts.Forbidden); forbidden {
			reject(ip, bad)
			continue
		}
		t.NotReady[ip] = why
	}
	// Published addresses no trusted port accounts for (Nova's view of a
	// network the approver does not trust, say) get a reason too.
	for ip := range inPublished {
		if _, later := t.NotReady[ip]; !later && !slices.Contains(t.Trusted, ip) {
			reject(ip, fmt.Sprintf("%s is not a fixed IP of a trusted port of the server nor a floating IP on one", ip))
		}
	}
	sort.Slice(t.Trusted, func(i, j int) bool { return t.Trusted[i].Less(t.Trusted[j]) })
	return t, nil
}

// portDistrust returns why a port's addresses are not trusted ("" when
// they are).
func portDistrust(p openstack.Port, serverID string, networks map[string]openstack.NetworkInfo, opts TrustOptions) (string, error) {
	if p.DeviceID != serverID {
		return fmt.Sprintf("port %s is attached to device %q, not to server %s", p.ID, p.DeviceID, serverID), nil
	}
	if opts.ProjectID != "" && p.ProjectID != opts.ProjectID {
		return fmt.Sprintf("port %s belongs to project %q, not the cluster's %q", p.ID, p.ProjectID, opts.ProjectID), nil
	}
	// Carrying the server's device_id proves nothing: any project member
	// may create a port with it (real Neutron allows it, and Nova then lists
	// its address for the server after its cache refresh). Such a port is
	// never bound (binding:host_id is admin-only to set) and stays DOWN; a
	// port on the server's NIC is bound to its host and ACTIVE. Where the
	// binding is visible (an admin's view), an unbound port of a running
	// server is such a port; where it is not, a port that is not ACTIVE is
	// not trusted yet (portNotReady).
	if p.BindingHostKnown && p.BindingHostID == "" {
		return fmt.Sprintf("port %s is bound to no host (binding:host_id is empty): it is not a NIC of the server", p.ID), nil
	}
	if len(opts.NetworkIDs) > 0 {
		return networkDistrust(p, openstack.NetworkInfo{ID: p.NetworkID}, opts), nil
	}
	n, ok := networks[p.NetworkID]
	if !ok {
		return "", fmt.Errorf("network %s of port %s: not in Neutron's answer", p.NetworkID, p.ID)
	}
	return networkDistrust(p, n, opts), nil
}

// portNotReady returns why a port that passes portDistrust is not trusted
// yet ("" when it is): its status is not ACTIVE. A NIC of the server is
// DOWN while Nova plugs it and while the network backend cannot report it
// up (an OVN northd outage); a port a project member made with the
// server's device_id stays DOWN. Which it is cannot be told from the
// cloud's answer, so an address on it is neither trusted nor rejected.
func portNotReady(p openstack.Port) string {
	if p.Status == openstack.PortStatusActive {
		return ""
	}
	return fmt.Sprintf("port %s has status %q, not ACTIVE: it is not (yet) plugged into the server's host", p.ID, p.Status)
}

// networkDistrust returns why a port's network is not trusted ("" when it
// is): not one of the trusted network IDs, or (without them) not one of
// the configured networks, or another project's unshared network.
func networkDistrust(p openstack.Port, n openstack.NetworkInfo, opts TrustOptions) string {
	if len(opts.NetworkIDs) > 0 {
		if !slices.Contains(opts.NetworkIDs, p.NetworkID) {
			return fmt.Sprintf("port %s is on network %s, not one of the trusted network IDs [%s]", p.ID, p.NetworkID, strings.Join(opts.NetworkIDs, ", "))
		}
		return ""
	}
	// The same choice as For: with internal network names set, only those
	// and the public ones; without, every network.
	if names := slices.Concat(opts.InternalNetworkNames, opts.PublicNetworkNames); len(opts.InternalNetworkNames) > 0 && !slices.Contains(names, n.Name) {
		return fmt.Sprintf("port %s is on network %q (%s), not one of the configured networks [%s]", p.ID, n.Name, n.ID, strings.Join(names, ", "))
	}
	if opts.ProjectID != "" && n.ProjectID != opts.ProjectID && !n.Shared {
		return fmt.Sprintf("port %s is on network %q (%s) of project %q, neither the cluster's %q nor shared", p.ID, n.Name, n.ID, n.ProjectID, opts.ProjectID)
	}
	return ""
}

// subportDistrust returns why a subport's addresses are not trusted (""
// when they are). A subport is the server's only through its trunk's
// parent, so that parent must be a trusted port of the server; the trunk
// and the subport must be the cluster's project's, the subport ACTIVE (its
// VLAN is up on the parent's host: Neutron gives a subport its parent's
// status when it joins the trunk) and its network trusted as a port's is.
func subportDistrust(sp Subport, trustedPorts map[string]openstack.Port, notReadyPorts map[string]string, opts TrustOptions) string {
	p := sp.Port
	_, parentNotReady := notReadyPorts[sp.Parent.ID]
	switch {
	case trustedPorts[sp.Parent.ID].ID == "" && !parentNotReady:
		return fmt.Sprintf("subport %s is on trunk %s whose parent port %s is not a trusted port of the server", p.ID, sp.Trunk.ID, sp.Parent.ID)
	case opts.ProjectID != "" && sp.Trunk.ProjectID != opts.ProjectID:
		return fmt.Sprintf("subport %s is on trunk %s of project %q, not the cluster's %q", p.ID, sp.Trunk.ID, sp.Trunk.ProjectID, opts.ProjectID)
	case opts.ProjectID != "" && p.ProjectID != opts.ProjectID:
		return fmt.Sprintf("subport %s belongs to project %q, not the cluster's %q", p.ID, p.ProjectID, opts.ProjectID)
	}
	return networkDistrust(p, sp.Network, opts)
}

// subportNotReady returns why a subport that passes subportDistrust is not
// trusted yet ("" when it is): its parent port or itself is not ACTIVE.
func subportNotReady(sp Subport, notReadyPorts map[string]string) string {
	if why, ok := notReadyPorts[sp.Parent.ID]; ok {
		return fmt.Sprintf("subport %s is on trunk %s whose parent %s", sp.Port.ID, sp.Trunk.ID, why)
	}
	if sp.Port.Status != openstack.PortStatusActive {
		return fmt.Sprintf("subport %s of trunk %s has status %q, not ACTIVE", sp.Port.ID, sp.Trunk.ID, sp.Port.Status)
	}
	return ""
}

// segmentationOf is the subport's VLAN ID, for messages.
func segmentationOf(sp Subport) int {
	for _, s := range sp.Trunk.SubPorts {
		if s.PortID == sp.Port.ID {
			return s.SegmentationID
		}
	}
	return 0
}

func portHas(p openstack.Port, ip string) bool {
	want, err := parse(ip)
	if err != nil {
		return false
	}
	for _, f := range p.FixedIPs {
		if got, err := parse(f.IPAddress); err == nil && got == want {
			return true
		}
	}
	return false
}

// Forbidden reports whether ip may never be in a kubelet serving
// certificate, and why: loopback, link-local, multicast, unspecified, or
// inside one of the configured ranges (Service CIDRs, the control-plane
// endpoint).
func Forbidden(ip netip.Addr, ranges []Range) (string, bool) {
	ip = ip.Unmap()
	switch {
	case ip.IsUnspecified():
		return fmt.Sprintf("%s is the unspecified address", ip), true
	case ip.IsLoopback():
		return fmt.Sprintf("%s is a loopback address", ip), true
	case ip.IsLinkLocalUnicast():
		return fmt.Sprintf("%s is a link-local address", ip), true
	case ip.IsMulticast():
		return fmt.Sprintf("%s is a multicast address", ip), true
	case ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Sprintf("%s is the broadcast address", ip), true
	}
	for _, r := range ranges {
		if r.Prefix.Contains(ip) {
			return fmt.Sprintf("%s is in %s (%s)", ip, r.What, r.Prefix), true
		}
	}
	return "", false
}
