package nodeaddress

import (
	"net/netip"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/openstack"
)

// FuzzFor checks the invariants both the CCM and the approver rely on: no
// duplicates, canonical IPs, no IPv6 when disabled, the same answer twice.
func FuzzFor(f *testing.F) {
	f.Add("net-a", "10.0.0.1", "net-b", "2001:db8::1", "203.0.113.1", "::ffff:10.0.0.1", true, false)
	f.Add("ext", "198.51.100.1", "ext", "198.51.100.1", "", "", false, true)
	f.Fuzz(func(t *testing.T, n1, a1, n2, a2, access4, floating string, v6off, public bool) {
		srv := &openstack.Server{ID: "s", Name: "node", AccessIPv4: access4, Addresses: map[string][]openstack.ServerAddress{
			n1: {{Addr: a1, Type: openstack.AddressFixed}},
		}}
		srv.Addresses[n2] = append(srv.Addresses[n2], openstack.ServerAddress{Addr: a2, Type: openstack.AddressFixed})
		if floating != "" {
			srv.Addresses[n2] = append(srv.Addresses[n2], openstack.ServerAddress{Addr: floating, Type: openstack.AddressFloating})
		}
		opts := Options{IPv6Disabled: v6off, SortOrder: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
		if public {
			opts.PublicNetworkNames = []string{n2}
		}
		got, err := For(srv, nil, opts)
		if err != nil {
			return
		}
		again, _ := For(srv, nil, opts)
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("not deterministic: %v then %v", got, again)
		}
		for i, a := range got {
			if slices.Contains(got[i+1:], a) {
				t.Fatalf("duplicate %v in %v", a, got)
			}
			if a.Type == corev1.NodeHostName {
				continue
			}
			ip, err := netip.ParseAddr(a.Address)
			if err != nil || ip.String() != a.Address {
				t.Fatalf("address %q is not a canonical IP", a.Address)
			}
			if v6off && ip.Is6() {
				t.Fatalf("IPv6 %s with IPv6 disabled", a.Address)
			}
		}
	})
}
