// Package nodeaddress is the one place that decides which addresses a Node
// has, from what Nova says about its server. The CCM publishes exactly these
// addresses, and the CSR approver accepts a subset of these (Trusted: only
// what the cloud itself controls), so the two can never drift apart: change
// the rules here and both follow.
//
// The rules follow the upstream OpenStack CCM where users depend on them:
//   - a fixed address is an InternalIP, or an ExternalIP when its network is
//     one of PublicNetworkNames; when InternalNetworkNames is set, fixed
//     addresses on other (non-public) networks are left out;
//   - a floating address is an ExternalIP, whatever its network;
//   - accessIPv4 and accessIPv6 are ExternalIPs;
//   - IPv6 addresses are left out when IPv6 is disabled;
//   - the server name is the Hostname.
//
// Nova's addresses map has no order, so the result is made deterministic:
// InternalIPs first (networks by name, each network in Nova's order), then
// the access IPs, then the other ExternalIPs (same network order), then the
// Hostname. This is the order upstream produces when the server's ports come
// in network order. Finally address-sort-order moves the addresses inside
// its CIDRs to the front, in the order of the list (a stable sort).
//
// For uses the server and the subports of trunks on its ports (subports.go),
// not the server's Neutron ports: Nova's addresses already list the fixed
// IPs of every port, and leaving ports out keeps the CCM's node lookup to
// the shared server and trunk listings (openstack.ServerCache and
// openstack.TrunkCache). What may be certified is stricter
// (cloudcontrolled.go): the approver also asks Neutron which ports and floating IPs
// the server owns, and trusts only those of them For also publishes.
package nodeaddress

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
)

// Options are the [Networking] settings that shape the addresses.
type Options struct {
	// InternalNetworkNames, when not empty, are the only networks whose
	// fixed addresses become InternalIPs.
	InternalNetworkNames []string
	// PublicNetworkNames are networks whose fixed addresses are ExternalIPs.
	PublicNetworkNames []string
	// IPv6Disabled drops every IPv6 address.
	IPv6Disabled bool
	// SortOrder moves addresses inside these prefixes first, in this order.
	SortOrder []netip.Prefix
}

// OptionsFromConfig returns the Options a [Networking] section asks for.
func OptionsFromConfig(n config.Networking) Options {
	return Options{
		InternalNetworkNames: slices.Clone(n.InternalNetworkNames),
		PublicNetworkNames:   slices.Clone(n.PublicNetworkNames),
		IPv6Disabled:         n.IPv6SupportDisabled,
		SortOrder:            slices.Clone(n.AddressSortOrder),
	}
}

// For returns the addresses of the Node backed by server, whose trunks'
// subports are subports (Subports; none when it has no trunk). An address
// Nova reports that is not an IP is an error: the cloud's answer cannot be
// trusted, and the approver must not approve on it.
func For(server *openstack.Server, subports []Subport, opts Options) ([]corev1.NodeAddress, error) {
	if server == nil {
		return nil, fmt.Errorf("node addresses: no server")
	}
	var b builder
	b.ipv6Disabled = opts.IPv6Disabled

	// A subport's fixed IPs join Nova's addresses of its network, after
	// them (upstream's order when a network reaches the server both
	// directly and through a trunk).
	byNetwork := make(map[string][]openstack.ServerAddress, len(server.Addresses))
	for name, list := range server.Addresses {
		byNetwork[name] = list
	}
	for _, sp := range subports {
		for _, f := range sp.Port.FixedIPs {
			byNetwork[sp.Network.Name] = append(slices.Clip(byNetwork[sp.Network.Name]), openstack.ServerAddress{Addr: f.IPAddress, Type: openstack.AddressFixed})
		}
	}
	networks := make([]string, 0, len(byNetwork))
	for name := range byNetwork {
		networks = append(networks, name)
	}
	sort.Strings(networks)

	var internal, external []netip.Addr
	for _, network := range networks {
		public := slices.Contains(opts.PublicNetworkNames, network)
		wanted := len(opts.InternalNetworkNames) == 0 || slices.Contains(opts.InternalNetworkNames, network)
		for _, a := range byNetwork[network] {
			ip, err := parse(a.Addr)
			if err != nil {
				return nil, fmt.Errorf("node addresses of server %s: network %q: %w", server.ID, network, err)
			}
			switch {
			case a.Type == openstack.AddressFloating || public:
				external = append(external, ip)
			case wanted:
				internal = append(internal, ip)
			}
		}
	}
	var access []netip.Addr
	for _, s := range []string{server.AccessIPv4, server.AccessIPv6} {
		if s == "" {
			continue
		}
		ip, err := parse(s)
		if err != nil {
			return nil, fmt.Errorf("node addresses of server %s: access IP: %w", server.ID, err)
		}
		access = append(access, ip)
	}

	// An address of a public network is external only, even when another
	// entry (a port on a second network, say) would make it internal:
	// upstream removes it from the internal ones for the same reason.
	for _, ip := range internal {
		if !slices.Contains(external, ip) {
			b.add(corev1.NodeInternalIP, ip)
		}
	}
	for _, ip := range access {
		b.add(corev1.NodeExternalIP, ip)
	}
	for _, ip := range external {
		b.add(corev1.NodeExternalIP, ip)
	}
	if server.Name != "" {
		b.out = append(b.out, corev1.NodeAddress{Type: corev1.NodeHostName, Address: server.Name})
	}
	sortByPrefixes(b.out, opts.SortOrder)
	return b.out, nil
}

type builder struct {
	ipv6Disabled bool
	out          []corev1.NodeAddress
}

// add appends the address unless it is filtered out or already there with
// the same type. The same IP may be both InternalIP and ExternalIP (an
// accessIPv4 that is also a fixed address), as upstream publishes it.
func (b *builder) add(t corev1.NodeAddressType, ip netip.Addr) {
	if b.ipv6Disabled && ip.Is6() {
		return
	}
	a := corev1.NodeAddress{Type: t, Address: ip.String()}
	if !slices.Contains(b.out, a) {
		b.out = append(b.out, a)
	}
}

// parse returns the canonical form of an IP, so that the same address is
// always written the same way (the approver compares strings).
func parse(s string) (netip.Addr, error) {
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("invalid IP address %q", s)
	}
	if ip.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("invalid IP address %q: zones are not node addresses", s)
	}
	return ip.Unmap(), nil
}

// sortByPrefixes moves addresses inside the prefixes to the front, those of
// the first prefix first; the rest keep their order.
func sortByPrefixes(addrs []corev1.NodeAddress, order []netip.Prefix) {
	if len(order) == 0 {
		return
	}
	rank := func(a corev1.NodeAddress) int {
		ip, err := netip.ParseAddr(a.Address)
		if err != nil || a.Type == corev1.NodeHostName {
			return len(order)
		}
		for i, p := range order {
			if p.Contains(ip) {
				return i
			}
		}
		return len(order)
	}
	sort.SliceStable(addrs, func(i, j int) bool { return rank(addrs[i]) < rank(addrs[j]) })
}
