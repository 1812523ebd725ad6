package nodeboot

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

const (
	mac1 = "fa:16:3e:00:00:01"
	mac2 = "fa:16:3e:00:00:02"
)

func link(id, mac string) string {
	return `{"id": "` + id + `", "type": "ovs", "mtu": 1450, "ethernet_mac_address": "` + mac + `"}`
}

func netdata(links []string, networks ...string) string {
	return `{"links": [` + strings.Join(links, ",") + `], "networks": [` + strings.Join(networks, ",") + `], "services": []}`
}

const (
	v4net0   = `{"id": "network0", "type": "ipv4", "link": "tap1", "ip_address": "10.0.0.11", "netmask": "255.255.255.0", "network_id": "net-a"}`
	v6net1   = `{"id": "network1", "type": "ipv6", "link": "tap1", "ip_address": "2001:db8::11", "netmask": "ffff:ffff:ffff:ffff::", "network_id": "net-a6"}`
	v6prefix = `{"id": "network1", "type": "ipv6", "link": "tap1", "ip_address": "2001:db8::12/64", "network_id": "net-a6"}`
	v4net2   = `{"id": "network2", "type": "ipv4", "link": "tap2", "ip_address": "192.168.50.7", "netmask": "255.255.255.0", "network_id": "net-b"}`
	dhcp4    = `{"id": "network0", "type": "ipv4_dhcp", "link": "tap1", "network_id": "net-a"}`
	dhcp6    = `{"id": "network1", "type": "ipv6_dhcp", "link": "tap1", "network_id": "net-a6"}`
)

func mustInstance(t *testing.T, meta, nd string) *Instance {
	t.Helper()
	if meta == "" {
		meta = `{"uuid": "u-1", "name": "node-1", "devices": [{"type": "nic", "mac": "` + mac2 + `", "tags": ["storage"]}]}`
	}
	md, err := decodeMetaData([]byte(meta), "meta_data.json")
	if err != nil {
		t.Fatalf("meta: %v", err)
	}
	n, err := decodeNetworkData([]byte(nd), "network_data.json")
	if err != nil {
		t.Fatalf("network data: %v", err)
	}
	return &Instance{Source: SourceConfigDrive, Origin: "test", Meta: md, Network: n}
}

func fakeInterfaces(ifs ...LocalInterface) InterfaceLister {
	return func() ([]LocalInterface, error) { return ifs, nil }
}

func failingInterfaces() ([]LocalInterface, error) {
	return nil, errors.New("interfaces must not be listed")
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

func TestChooseNodeIPs(t *testing.T) {
	twoLinks := []string{link("tap1", mac1), link("tap2", mac2)}
	oneLink := []string{link("tap1", mac1)}
	for _, tc := range []struct {
		name     string
		nd       string
		sel      Selector
		ifs      InterfaceLister
		want     string // comma separated
		wantErr  error
		errParts []string
	}{
		{name: "single NIC IPv4 static address is the node IP",
			nd: netdata(oneLink, v4net0), sel: Selector{Family: IPv4}, want: "10.0.0.11"},
		{name: "dual-stack gives IPv4 then IPv6",
			nd: netdata(oneLink, v6net1, v4net0), sel: Selector{Family: Dual}, want: "10.0.0.11,2001:db8::11"},
		{name: "IPv6 family picks the IPv6 address",
			nd: netdata(oneLink, v4net0, v6net1), sel: Selector{Family: IPv6}, want: "2001:db8::11"},
		{name: "IPv6 ip_address with a prefix length is accepted",
			nd: netdata(oneLink, v6prefix), sel: Selector{Family: IPv6}, want: "2001:db8::12"},
		{name: "two networks without preference take the first",
			nd: netdata(twoLinks, v4net0, v4net2), sel: Selector{Family: IPv4}, want: "10.0.0.11"},
		{name: "two networks with a CIDR preference take the preferred",
			nd:  netdata(twoLinks, v4net0, v4net2),
			sel: Selector{Family: IPv4, PreferCIDRs: []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}}, want: "192.168.50.7"},
		{name: "the first matching CIDR preference wins",
			nd: netdata(twoLinks, v4net0, v4net2),
			sel: Selector{Family: IPv4, PreferCIDRs: []netip.Prefix{
				netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.0.0/16")}},
			want: "10.0.0.11"},
		{name: "network chosen by Neutron network_id",
			nd: netdata(twoLinks, v4net0, v4net2), sel: Selector{Family: IPv4, Network: "net-b"}, want: "192.168.50.7"},
		{name: "network chosen by network_data id",
			nd: netdata(twoLinks, v4net0, v4net2), sel: Selector{Family: IPv4, Network: "network2"}, want: "192.168.50.7"},
		{name: "network chosen by Nova device tag",
			nd: netdata(twoLinks, v4net0, v4net2), sel: Selector{Family: IPv4, Network: "storage"}, want: "192.168.50.7"},
		{name: "static networks never list local interfaces",
			nd: netdata(oneLink, v4net0), sel: Selector{Family: IPv4}, ifs: failingInterfaces, want: "10.0.0.11"},
		{name: "DHCP network uses the address of the interface with the link's MAC",
			nd: netdata(twoLinks, dhcp4), sel: Selector{Family: IPv4},
			ifs: fakeInterfaces(
				LocalInterface{Name: "lo", Addrs: addrs("127.0.0.1", "::1")},
				LocalInterface{Name: "eth1", MAC: mac2, Addrs: addrs("192.168.50.9")},
				LocalInterface{Name: "eth0", MAC: mac1, Addrs: addrs("fe80::1", "10.0.0.42")}),
			want: "10.0.0.42"},
		{name: "DHCPv6 skips link-local addresses",
			nd: netdata(oneLink, dhcp4, dhcp6), sel: Selector{Family: Dual},
			ifs:  fakeInterfaces(LocalInterface{Name: "eth0", MAC: mac1, Addrs: addrs("fe80::f816:3eff:fe00:1", "10.0.0.42", "2001:db8::42")}),
			want: "10.0.0.42,2001:db8::42"},
		{name: "MAC in network data is matched case-insensitively",
			nd: netdata([]string{link("tap1", strings.ToUpper(mac1))}, dhcp4), sel: Selector{Family: IPv4},
			ifs:  fakeInterfaces(LocalInterface{Name: "eth0", MAC: mac1, Addrs: addrs("10.0.0.42")}),
			want: "10.0.0.42"},
		{name: "DHCP network without a matching interface is refused naming the MAC",
			nd: netdata(oneLink, dhcp4), sel: Selector{Family: IPv4},
			ifs:     fakeInterfaces(LocalInterface{Name: "eth1", MAC: mac2, Addrs: addrs("192.168.50.9")}),
			wantErr: ErrNoAddress, errParts: []string{"no ipv4 address", "network0 (ipv4_dhcp)", mac1}},
		{name: "IPv6 requested on an IPv4-only instance is refused",
			nd: netdata(oneLink, v4net0), sel: Selector{Family: IPv6},
			wantErr: ErrNoAddress, errParts: []string{"test: no ipv6 address"}},
		{name: "dual-stack requested with IPv4 only is refused",
			nd: netdata(oneLink, v4net0), sel: Selector{Family: Dual},
			wantErr: ErrNoAddress, errParts: []string{"no ipv6 address"}},
		{name: "unknown network is refused listing the networks",
			nd: netdata(twoLinks, v4net0, v4net2), sel: Selector{Family: IPv4, Network: "nope"},
			wantErr: ErrNoAddress, errParts: []string{"--network=nope", "network0 network_id=net-a", "network2 network_id=net-b"}},
		{name: "network exists but has no address of the family",
			nd: netdata(twoLinks, v4net0, v4net2), sel: Selector{Family: IPv6, Network: "net-b"},
			wantErr: ErrNoAddress, errParts: []string{"no ipv6 address on network net-b"}},
		{name: "ip_address of the wrong family is invalid metadata",
			nd:  netdata(oneLink, `{"id": "network0", "type": "ipv4", "link": "tap1", "ip_address": "2001:db8::1"}`),
			sel: Selector{Family: IPv4}, wantErr: ErrInvalidMetadata, errParts: []string{`network "network0"`, "2001:db8::1"}},
		{name: "malformed ip_address is invalid metadata",
			nd:  netdata(oneLink, `{"id": "network0", "type": "ipv4", "link": "tap1", "ip_address": "10.0.0.300"}`),
			sel: Selector{Family: IPv4}, wantErr: ErrInvalidMetadata, errParts: []string{`field "ip_address"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := mustInstance(t, "", tc.nd)
			ifs := tc.ifs
			if ifs == nil {
				ifs = failingInterfaces
			}
			got, err := ChooseNodeIPs(inst, tc.sel, ifs)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				for _, p := range tc.errParts {
					if !strings.Contains(err.Error(), p) {
						t.Errorf("error %q does not mention %q", err, p)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			s := Settings{NodeIPs: got}
			if s.NodeIP() != tc.want {
				t.Errorf("node IP = %s, want %s", s.NodeIP(), tc.want)
			}
		})
	}
}

func TestDecodeRefusesBrokenMetadata(t *testing.T) {
	for _, tc := range []struct {
		name, meta, nd, field string
	}{
		{name: "meta_data.json without uuid", meta: `{"name": "n"}`, field: `"uuid"`},
		{name: "meta_data.json with an empty uuid", meta: `{"uuid": " "}`, field: `"uuid"`},
		{name: "uuid that cannot be a provider ID", meta: `{"uuid": "a/b"}`, field: `"uuid"`},
		{name: "meta_data.json that is not JSON", meta: `<html>`, field: "decode meta_data.json"},
		{name: "network_data.json without networks", nd: `{"links": [], "networks": []}`, field: `"networks"`},
		{name: "network without a type", nd: netdata(nil, `{"id": "network0"}`), field: `"type"`},
		{name: "network on a link that does not exist", nd: netdata(nil, `{"id": "network0", "type": "ipv4", "link": "tapX"}`), field: `link "tapX"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.meta != "" {
				_, err = decodeMetaData([]byte(tc.meta), "meta_data.json")
			} else {
				_, err = decodeNetworkData([]byte(tc.nd), "network_data.json")
			}
			if !errors.Is(err, ErrInvalidMetadata) {
				t.Fatalf("err = %v, want ErrInvalidMetadata", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name %s", err, tc.field)
			}
		})
	}
}
