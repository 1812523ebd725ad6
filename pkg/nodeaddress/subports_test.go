package nodeaddress

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/openstack"
)

// withSubport puts a trunk on port-1 whose VLAN 100 subport is on network
// "storage" (192.168.50.21), then lets change alter the view.
func withSubport(change func(*CloudView)) func() CloudView {
	return func() CloudView {
		v := view()
		v.Trunks = []openstack.Trunk{{ID: "trunk-1", ProjectID: "proj", PortID: "port-1",
			SubPorts: []openstack.SubPort{{PortID: "sub-1", SegmentationType: "vlan", SegmentationID: 100}}}}
		v.Subports = []openstack.Port{{ID: "sub-1", ProjectID: "proj", NetworkID: "net-storage", Status: "ACTIVE", DeviceOwner: "trunk:subport",
			FixedIPs: []openstack.FixedIP{{IPAddress: "192.168.50.21"}}}}
		v.Networks = append(v.Networks, openstack.NetworkInfo{ID: "net-storage", Name: "storage", ProjectID: "proj"})
		if change != nil {
			change(&v)
		}
		return v
	}
}

func TestSubportAddresses(t *testing.T) {
	tests := []struct {
		name      string
		view      func() CloudView
		opts      TrustOptions
		published []corev1.NodeAddress // the subport's, when it is published
		trusted   bool
		reason    string // why the subport's address is not trusted
		later     string // why the subport's address is not trusted yet
	}{
		{name: "a subport of a trunk on the server's port is published and trusted",
			view: withSubport(nil), opts: TrustOptions{ProjectID: "proj"},
			published: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.50.21"}}, trusted: true},
		{name: "on a public network it is an ExternalIP",
			view: withSubport(nil), opts: TrustOptions{ProjectID: "proj", Options: Options{PublicNetworkNames: []string{"storage"}}},
			published: []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "192.168.50.21"}}, trusted: true},
		{name: "outside internal-network-name it is neither published nor trusted",
			view: withSubport(nil), opts: TrustOptions{ProjectID: "proj", Options: Options{InternalNetworkNames: []string{"private"}}},
			reason: "not one of the configured networks"},
		{name: "with IPv6 disabled an IPv6 subport address is left out",
			view: withSubport(func(v *CloudView) { v.Subports[0].FixedIPs = []openstack.FixedIP{{IPAddress: "fd00::21"}} }),
			opts: TrustOptions{ProjectID: "proj", Options: Options{IPv6Disabled: true}}},
		{name: "a trunk on a port that is not the server's adds nothing",
			view: withSubport(func(v *CloudView) { v.Trunks[0].PortID = "port-elsewhere" }), opts: TrustOptions{ProjectID: "proj"}},
		{name: "a subport on a trunk whose parent is a forged port (unbound, in an administrator's answer) is published (as upstream) but not trusted",
			view:      withSubport(func(v *CloudView) { v.Ports[0].Status, v.Ports[0].BindingHostKnown = "DOWN", true }),
			opts:      TrustOptions{ProjectID: "proj"},
			published: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.50.21"}},
			reason:    "parent port port-1 is not a trusted port"},
		{name: "a subport on a trunk whose parent is DOWN is not trusted yet",
			view:      withSubport(func(v *CloudView) { v.Ports[0].Status = "DOWN" }),
			opts:      TrustOptions{ProjectID: "proj"},
			published: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.50.21"}},
			later:     `parent port port-1 has status "DOWN"`},
		{name: "a DOWN subport is not trusted yet",
			view:      withSubport(func(v *CloudView) { v.Subports[0].Status = "DOWN" }),
			opts:      TrustOptions{ProjectID: "proj"},
			published: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.50.21"}},
			later:     `status "DOWN", not ACTIVE`},
		{name: "another project's trunk is not trusted",
			view:      withSubport(func(v *CloudView) { v.Trunks[0].ProjectID = "other" }),
			opts:      TrustOptions{ProjectID: "proj"},
			published: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.50.21"}},
			reason:    `trunk trunk-1 of project "other"`},
		{name: "a subport on another project's unshared network is not trusted",
			view:      withSubport(func(v *CloudView) { v.Networks[1].ProjectID = "other" }),
			opts:      TrustOptions{ProjectID: "proj"},
			published: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.50.21"}},
			reason:    "neither the cluster's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.view()
			got, err := ForView(v, tt.opts.Options)
			if err != nil {
				t.Fatal(err)
			}
			var subport []corev1.NodeAddress
			for _, a := range got {
				if strings.HasPrefix(a.Address, "192.168.50.") || strings.HasPrefix(a.Address, "fd00::") {
					subport = append(subport, a)
				}
			}
			if !slices.Equal(subport, tt.published) {
				t.Errorf("published subport addresses %v, want %v (all: %v)", subport, tt.published, got)
			}
			trust, err := Trusted(v, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			ip := netip.MustParseAddr("192.168.50.21")
			if trust.IsTrusted(ip) != tt.trusted {
				t.Errorf("subport address trusted: %v, want %v (untrusted %v)", trust.IsTrusted(ip), tt.trusted, trust.Untrusted)
			}
			if tt.reason != "" && !strings.Contains(trust.Untrusted[ip], tt.reason) {
				t.Errorf("reason %q, want it to say %q", trust.Untrusted[ip], tt.reason)
			}
			if why, ok := trust.NotReady[ip]; ok != (tt.later != "") || !strings.Contains(why, tt.later) {
				t.Errorf("not ready: %q (%v), want %q", why, ok, tt.later)
			}
			if v.Ports[0].Status == "ACTIVE" && !trust.IsTrusted(netip.MustParseAddr("10.0.0.5")) {
				t.Errorf("the server's own fixed IP is no longer trusted: %v", trust.Untrusted)
			}
		})
	}
	t.Run("a subport whose network Neutron did not return is an error", func(t *testing.T) {
		v := withSubport(func(v *CloudView) { v.Networks = v.Networks[:1] })()
		if _, err := Trusted(v, TrustOptions{ProjectID: "proj"}); err == nil || !strings.Contains(err.Error(), "subport sub-1") {
			t.Fatalf("error %v, want one naming the subport", err)
		}
	})
}
