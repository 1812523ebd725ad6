package nodeboot

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// IPFamily selects which node IPs are chosen.
type IPFamily string

const (
	IPv4 IPFamily = "ipv4"
	IPv6 IPFamily = "ipv6"
	// Dual chooses one IPv4 and one IPv6 address, IPv4 first, which the
	// kubelet accepts as --node-ip=<v4>,<v6> with an external cloud provider.
	Dual IPFamily = "dual"
)

// LocalInterface is a network interface of this machine, as far as address
// selection cares.
type LocalInterface struct {
	Name  string
	MAC   string // lower case, colon separated
	Addrs []netip.Addr
}

// InterfaceLister lists the local interfaces; tests replace it.
type InterfaceLister func() ([]LocalInterface, error)

// SystemInterfaces lists the interfaces of this machine (net.Interfaces).
func SystemInterfaces() ([]LocalInterface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list network interfaces: %w", err)
	}
	out := make([]LocalInterface, 0, len(ifs))
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			return nil, fmt.Errorf("addresses of interface %s: %w", ifc.Name, err)
		}
		li := LocalInterface{Name: ifc.Name, MAC: strings.ToLower(ifc.HardwareAddr.String())}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				li.Addrs = append(li.Addrs, p.Addr().Unmap())
			}
		}
		out = append(out, li)
	}
	return out, nil
}

// Selector says which addresses of network_data.json may become the node IP.
type Selector struct {
	// Network, if set, restricts the choice to networks whose Neutron
	// network_id, network_data id ("network0"), link id, or Nova device tag
	// (meta_data.json devices[].tags of the NIC on that link) equals it.
	Network string
	// PreferCIDRs orders candidates: an address inside the first CIDR wins
	// over one inside the second, which wins over one inside none. Within
	// a rank the order of network_data.json decides.
	PreferCIDRs []netip.Prefix
	Family      IPFamily
}

type candidate struct {
	addr netip.Addr
	net  string // network_data id, for messages
}

// ChooseNodeIPs picks the node IP(s) from an instance's network data.
// Networks without a static address (DHCP, SLAAC) use the address of the
// local interface whose MAC is the link's. Errors name inst.Origin.
func ChooseNodeIPs(inst *Instance, sel Selector, list InterfaceLister) ([]netip.Addr, error) {
	nd := inst.Network
	links := map[string]Link{}
	for _, l := range nd.Links {
		links[l.ID] = l
	}
	tags := map[string][]string{} // mac -> device tags
	for _, d := range inst.Meta.Devices {
		if d.Type == "nic" && d.MAC != "" {
			tags[strings.ToLower(d.MAC)] = d.Tags
		}
	}

	var (
		cands   []candidate
		notes   []string // why a network gave no address, for the error
		matched bool
		locals  []LocalInterface
		listed  bool
	)
	for _, n := range nd.Networks {
		link := links[n.Link]
		if sel.Network != "" && !networkMatches(n, link, tags, sel.Network) {
			continue
		}
		matched = true
		fam := networkFamily(n.Type)
		if fam == "" {
			notes = append(notes, fmt.Sprintf("%s: unknown type %q", n.ID, n.Type))
			continue
		}
		if n.IPAddress != "" {
			a, err := parseStaticIP(n.IPAddress)
			if err != nil {
				return nil, fmt.Errorf("%s: network %q: field %q: %w: %w", inst.Origin, n.ID, "ip_address", ErrInvalidMetadata, err)
			}
			if familyOf(a) != fam {
				return nil, fmt.Errorf("%s: network %q: ip_address %s is not %s as its type %q says: %w",
					inst.Origin, n.ID, a, fam, n.Type, ErrInvalidMetadata)
			}
			if !usable(a) {
				notes = append(notes, fmt.Sprintf("%s: %s is loopback, link-local, multicast or unspecified", n.ID, a))
				continue
			}
			cands = append(cands, candidate{addr: a, net: n.ID})
			continue
		}
		// No static address: ask the interface that carries the link.
		mac := link.mac()
		if mac == "" {
			notes = append(notes, fmt.Sprintf("%s (%s): no static ip_address and link %q has no MAC", n.ID, n.Type, n.Link))
			continue
		}
		if !listed {
			var err error
			if locals, err = list(); err != nil {
				return nil, fmt.Errorf("network %q is %s, so its address is on the local interface: %w", n.ID, n.Type, err)
			}
			listed = true
		}
		found := false
		for _, li := range locals {
			if li.MAC != mac {
				continue
			}
			for _, a := range li.Addrs {
				if familyOf(a) == fam && usable(a) {
					cands = append(cands, candidate{addr: a, net: n.ID})
					found = true
					break
				}
			}
			if found {
				break
			}
		}
		if !found {
			notes = append(notes, fmt.Sprintf("%s (%s): no local interface with MAC %s has a %s address", n.ID, n.Type, mac, fam))
		}
	}
	if !matched {
		return nil, fmt.Errorf("%s: no network matches --network=%s (networks: %s): %w",
			inst.Origin, sel.Network, describeNetworks(nd), ErrNoAddress)
	}

	rank := func(a netip.Addr) int {
		for i, p := range sel.PreferCIDRs {
			if p.Contains(a) {
				return i
			}
		}
		return len(sel.PreferCIDRs)
	}
	slices.SortStableFunc(cands, func(x, y candidate) int { return rank(x.addr) - rank(y.addr) })

	want := []IPFamily{sel.Family}
	if sel.Family == Dual {
		want = []IPFamily{IPv4, IPv6}
	}
	var out []netip.Addr
	for _, fam := range want {
		i := slices.IndexFunc(cands, func(c candidate) bool { return familyOf(c.addr) == fam })
		if i < 0 {
			msg := fmt.Sprintf("%s: no %s address", inst.Origin, fam)
			if sel.Network != "" {
				msg += " on network " + sel.Network
			}
			if len(notes) > 0 {
				msg += " (" + strings.Join(notes, "; ") + ")"
			}
			return nil, fmt.Errorf("%s: %w", msg, ErrNoAddress)
		}
		out = append(out, cands[i].addr)
	}
	return out, nil
}

func networkMatches(n Network, l Link, tags map[string][]string, want string) bool {
	if want == n.NetworkID || want == n.ID || (n.Link != "" && want == n.Link) {
		return true
	}
	return slices.Contains(tags[l.mac()], want) || slices.Contains(tags[strings.ToLower(l.MAC)], want)
}

func networkFamily(typ string) IPFamily {
	switch {
	case strings.HasPrefix(typ, "ipv4"):
		return IPv4
	case strings.HasPrefix(typ, "ipv6"):
		return IPv6
	}
	return ""
}

func familyOf(a netip.Addr) IPFamily {
	if a.Is4() {
		return IPv4
	}
	return IPv6
}

// parseStaticIP accepts "10.0.0.5" and the "2001:db8::5/64" form some
// OpenStack releases write for IPv6.
func parseStaticIP(s string) (netip.Addr, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Addr{}, err
		}
		return p.Addr().Unmap(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, err
	}
	return a.Unmap(), nil
}

// usable excludes addresses a kubelet cannot serve on or that would not be
// the instance's fixed address.
func usable(a netip.Addr) bool {
	return a.IsValid() && !a.IsLoopback() && !a.IsUnspecified() && !a.IsLinkLocalUnicast() && !a.IsMulticast()
}

func describeNetworks(nd NetworkData) string {
	var parts []string
	for _, n := range nd.Networks {
		parts = append(parts, fmt.Sprintf("%s network_id=%s link=%s", n.ID, n.NetworkID, n.Link))
	}
	return strings.Join(parts, "; ")
}
