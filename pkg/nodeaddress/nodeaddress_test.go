package nodeaddress

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
)

func fixed(addr string) openstack.ServerAddress {
	v := 4
	if strings.Contains(addr, ":") {
		v = 6
	}
	return openstack.ServerAddress{Addr: addr, Version: v, Type: openstack.AddressFixed}
}

func floating(addr string) openstack.ServerAddress {
	a := fixed(addr)
	a.Type = openstack.AddressFloating
	return a
}

func in(a string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a}
}
func ex(a string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: a}
}
func host(a string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeHostName, Address: a}
}

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func TestFor(t *testing.T) {
	tests := []struct {
		name   string
		server openstack.Server
		opts   Options
		want   []corev1.NodeAddress
	}{
		{
			name: "a single fixed address is the InternalIP and the server name the Hostname",
			server: openstack.Server{ID: "s1", Name: "node-1", Addresses: map[string][]openstack.ServerAddress{
				"private": {fixed("10.0.0.5")},
			}},
			want: []corev1.NodeAddress{in("10.0.0.5"), host("node-1")},
		},
		{
			name: "a floating address on the same network is an ExternalIP after the InternalIPs",
			server: openstack.Server{ID: "s1", Name: "node-1", Addresses: map[string][]openstack.ServerAddress{
				"private": {floating("203.0.113.7"), fixed("10.0.0.5")},
			}},
			want: []corev1.NodeAddress{in("10.0.0.5"), ex("203.0.113.7"), host("node-1")},
		},
		{
			name: "multi-NIC server lists networks by name and keeps Nova's order inside each",
			server: openstack.Server{ID: "s1", Name: "node-1", Addresses: map[string][]openstack.ServerAddress{
				"storage": {fixed("192.168.10.4"), fixed("192.168.10.9")},
				"app":     {fixed("10.1.0.3")},
				"mgmt":    {fixed("172.16.0.8")},
			}},
			want: []corev1.NodeAddress{in("10.1.0.3"), in("172.16.0.8"), in("192.168.10.4"), in("192.168.10.9"), host("node-1")},
		},
		{
			name: "dual-stack keeps both families and writes IPv6 in canonical form",
			server: openstack.Server{ID: "s1", Name: "node-1", Addresses: map[string][]openstack.ServerAddress{
				"private": {fixed("10.0.0.5"), fixed("2001:DB8:0:0::5")},
			}},
			want: []corev1.NodeAddress{in("10.0.0.5"), in("2001:db8::5"), host("node-1")},
		},
		{
			name: "IPv6 disabled drops IPv6 fixed, floating and access addresses",
			server: openstack.Server{ID: "s1", Name: "node-1", AccessIPv4: "198.51.100.1", AccessIPv6: "2001:db8::1",
				Addresses: map[string][]openstack.ServerAddress{
					"private": {fixed("10.0.0.5"), fixed("2001:db8::5"), floating("2001:db8:ff::5")},
				}},
			opts: Options{IPv6Disabled: true},
			want: []corev1.NodeAddress{in("10.0.0.5"), ex("198.51.100.1"), host("node-1")},
		},
		{
			name: "two networks with internal-network-name set keep only that network's fixed addresses",
			server: openstack.Server{ID: "s1", Name: "node-1", Addresses: map[string][]openstack.ServerAddress{
				"k8s":     {fixed("10.0.0.5")},
				"storage": {fixed("192.168.10.4"), floating("203.0.113.9")},
			}},
			opts: Options{InternalNetworkNames: []string{"k8s"}},
			want: []corev1.NodeAddress{in("10.0.0.5"), ex("203.0.113.9"), host("node-1")},
		},
		{
			name: "fixed addresses on a public network are ExternalIPs only",
			server: openstack.Server{ID: "s1", Name: "node-1", Addresses: map[string][]openstack.ServerAddress{
				"ext":     {fixed("198.51.100.20"), fixed("2001:db8:1::20")},
				"private": {fixed("10.0.0.5")},
			}},
			opts: Options{PublicNetworkNames: []string{"ext"}},
			want: []corev1.NodeAddress{in("10.0.0.5"), ex("198.51.100.20"), ex("2001:db8:1::20"), host("node-1")},
		},
		{
			name: "a public network wins over the same address seen on an internal network",
			server: openstack.Server{ID: "s1", Name: "node-1", Addresses: map[string][]openstack.ServerAddress{
				"a-private": {fixed("198.51.100.20")},
				"ext":       {fixed("198.51.100.20")},
			}},
			opts: Options{PublicNetworkNames: []string{"ext"}},
			want: []corev1.NodeAddress{ex("198.51.100.20"), host("node-1")},
		},
		{
			name: "access IPs are ExternalIPs before floating ones and may repeat a fixed address",
			server: openstack.Server{ID: "s1", Name: "node-1", AccessIPv4: "10.0.0.5", AccessIPv6: "2001:db8::a",
				Addresses: map[string][]openstack.ServerAddress{
					"private": {fixed("10.0.0.5"), floating("203.0.113.7")},
				}},
			want: []corev1.NodeAddress{in("10.0.0.5"), ex("10.0.0.5"), ex("2001:db8::a"), ex("203.0.113.7"), host("node-1")},
		},
		{
			name: "an address listed twice appears once",
			server: openstack.Server{ID: "s1", Name: "node-1", AccessIPv4: "203.0.113.7",
				Addresses: map[string][]openstack.ServerAddress{
					"private": {fixed("10.0.0.5"), fixed("10.0.0.5"), floating("203.0.113.7")},
				}},
			want: []corev1.NodeAddress{in("10.0.0.5"), ex("203.0.113.7"), host("node-1")},
		},
		{
			name: "address-sort-order moves matching addresses first in the order of the list",
			server: openstack.Server{ID: "s1", Name: "node-1", Addresses: map[string][]openstack.ServerAddress{
				"a": {fixed("10.0.0.5"), fixed("2001:db8::5")},
				"b": {fixed("192.168.1.5"), floating("203.0.113.7")},
				"c": {fixed("172.16.0.5")},
			}},
			opts: Options{SortOrder: prefixes("192.168.0.0/16", "2001:db8::/32")},
			want: []corev1.NodeAddress{in("192.168.1.5"), in("2001:db8::5"), in("10.0.0.5"), in("172.16.0.5"), ex("203.0.113.7"), host("node-1")},
		},
		{
			name:   "a server without addresses or name has no addresses",
			server: openstack.Server{ID: "s1"},
			want:   nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := For(&tt.server, nil, tt.opts)
			if err != nil {
				t.Fatalf("For: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("For:\n got  %v\n want %v", got, tt.want)
			}
			// Nova's map order must not matter: run again and compare.
			for i := 0; i < 20; i++ {
				again, _ := For(&tt.server, nil, tt.opts)
				if !reflect.DeepEqual(again, got) {
					t.Fatalf("For is not deterministic: %v then %v", got, again)
				}
			}
		})
	}
}

func TestForRejectsWhatIsNotAnAddress(t *testing.T) {
	tests := []struct {
		name   string
		server *openstack.Server
		want   string
	}{
		{"no server is an error", nil, "no server"},
		{"a garbage fixed address is an error naming it", &openstack.Server{ID: "s1", Addresses: map[string][]openstack.ServerAddress{
			"private": {fixed("10.0.0.300")},
		}}, `network "private": invalid IP address "10.0.0.300"`},
		{"a garbage access IP is an error naming it", &openstack.Server{ID: "s1", AccessIPv4: "example.com"}, `access IP: invalid IP address "example.com"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := For(tt.server, nil, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("For = %v, %v; want an error containing %q", got, err, tt.want)
			}
		})
	}
}

func TestOptionsFromConfigCopiesNetworking(t *testing.T) {
	n := config.Networking{
		InternalNetworkNames: []string{"k8s"},
		PublicNetworkNames:   []string{"ext", "ext2"},
		IPv6SupportDisabled:  true,
		AddressSortOrder:     prefixes("10.0.0.0/8"),
	}
	got := OptionsFromConfig(n)
	want := Options{
		InternalNetworkNames: []string{"k8s"},
		PublicNetworkNames:   []string{"ext", "ext2"},
		IPv6Disabled:         true,
		SortOrder:            prefixes("10.0.0.0/8"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("OptionsFromConfig = %+v, want %+v", got, want)
	}
	n.PublicNetworkNames[0] = "changed"
	if got.PublicNetworkNames[0] != "ext" {
		t.Errorf("Options share memory with the Config")
	}
}
