package nodeaddress

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/openstack"
)

// view is a server of project "proj" with one port on network "private"
// (10.0.0.5) carrying floating IP 203.0.113.5.
func view() CloudView {
	return CloudView{
		Server: &openstack.Server{ID: "srv", Name: "node-1", TenantID: "proj", Addresses: map[string][]openstack.ServerAddress{
			"private": {
				{Addr: "10.0.0.5", Version: 4, Type: openstack.AddressFixed},
				{Addr: "203.0.113.5", Version: 4, Type: openstack.AddressFloating},
			},
		}},
		Ports: []openstack.Port{{ID: "port-1", DeviceID: "srv", ProjectID: "proj", NetworkID: "net-private", Status: "ACTIVE",
			FixedIPs: []openstack.FixedIP{{IPAddress: "10.0.0.5"}}}},
		FloatingIPs: []openstack.FloatingIP{{ID: "fip-1", Address: "203.0.113.5", PortID: "port-1", FixedIPAddress: "10.0.0.5", ProjectID: "proj"}},
		Networks:    []openstack.NetworkInfo{{ID: "net-private", Name: "private", ProjectID: "proj"}},
	}
}

// addNIC gives the server a second port on network name/id of project owner.
func addNIC(v CloudView, id, name, owner, ip string) CloudView {
	v.Server.Addresses[name] = append(v.Server.Addresses[name], openstack.ServerAddress{Addr: ip, Version: 4, Type: openstack.AddressFixed})
	v.Ports = append(v.Ports, openstack.Port{ID: "port-" + id, DeviceID: "srv", ProjectID: "proj", NetworkID: id, Status: "ACTIVE",
		FixedIPs: []openstack.FixedIP{{IPAddress: ip}}})
	v.Networks = append(v.Networks, openstack.NetworkInfo{ID: id, Name: name, ProjectID: owner})
	return v
}

func TestTrustedIsWhatTheCloudControlsAndTheCCMPublishes(t *testing.T) {
	serviceCIDR := Range{Prefix: netip.MustParsePrefix("10.96.0.0/12"), What: "the Service CIDR"}
	endpoint := Range{Prefix: netip.MustParsePrefix("192.0.2.10/32"), What: "the control-plane endpoint"}
	tests := []struct {
		name      string
		view      func() CloudView
		opts      TrustOptions
		trusted   []string
		untrusted map[string]string // IP → a part of the reason
		notReady  map[string]string // IP → a part of why not yet
	}{
		{name: "fixed IP of the server's port and the floating IP on it are trusted",
			view: view, opts: TrustOptions{ProjectID: "proj"}, trusted: []string{"10.0.0.5", "203.0.113.5"}},
		{name: "accessIPv4 is not trusted by default, and the reason says who can set it",
			view: func() CloudView { v := view(); v.Server.AccessIPv4 = "10.96.0.1"; return v },
			opts: TrustOptions{ProjectID: "proj"}, trusted: []string{"10.0.0.5", "203.0.113.5"},
			untrusted: map[string]string{"10.96.0.1": "accessIPv4, a field any project member can set"}},
		{name: "accessIPv4 is trusted with --allow-access-ips",
			view: func() CloudView { v := view(); v.Server.AccessIPv4 = "198.51.100.7"; return v },
			opts: TrustOptions{ProjectID: "proj", AllowAccessIPs: true}, trusted: []string{"10.0.0.5", "198.51.100.7", "203.0.113.5"}},
		{name: "an allowed access IP inside the Service CIDR is still forbidden",
			view:    func() CloudView { v := view(); v.Server.AccessIPv4 = "10.96.0.1"; return v },
			opts:    TrustOptions{ProjectID: "proj", AllowAccessIPs: true, Forbidden: []Range{serviceCIDR}},
			trusted: []string{"10.0.0.5", "203.0.113.5"}, untrusted: map[string]string{"10.96.0.1": "the Service CIDR (10.96.0.0/12)"}},
		{name: "a fixed IP in the Service CIDR is forbidden even though the port is the server's",
			view: func() CloudView { return addNIC(view(), "net-svc", "svc", "proj", "10.96.0.10") },
			opts: TrustOptions{ProjectID: "proj", Forbidden: []Range{serviceCIDR}}, trusted: []string{"10.0.0.5", "203.0.113.5"},
			untrusted: map[string]string{"10.96.0.10": "Service CIDR"}},
		{name: "the control-plane endpoint is forbidden",
			view: func() CloudView { return addNIC(view(), "net-cp", "cp", "proj", "192.0.2.10") },
			opts: TrustOptions{ProjectID: "proj", Forbidden: []Range{endpoint}}, trusted: []string{"10.0.0.5", "203.0.113.5"},
			untrusted: map[string]string{"192.0.2.10": "control-plane endpoint"}},
		{name: "a DOWN port carrying the server's device_id is not trusted, though Nova lists its address, nor rejected: a member may have forged it, or the server's NIC is not plugged yet",
			view: func() CloudView {
				v := addNIC(view(), "net-private", "private", "proj", "10.0.0.66")
				v.Networks = v.Networks[:1] // the same network as the real NIC
				v.Ports[1].Status = "DOWN"
				return v
			},
			opts: TrustOptions{ProjectID: "proj"}, trusted: []string{"10.0.0.5", "203.0.113.5"},
			notReady: map[string]string{"10.0.0.66": `status "DOWN", not ACTIVE`}},
		{name: "where an administrator's answer shows the DOWN port bound to no host, it is rejected: a running server's NIC is bound",
			view: func() CloudView {
				v := addNIC(view(), "net-private", "private", "proj", "10.0.0.66")
				v.Networks = v.Networks[:1]
				v.Ports[1].Status, v.Ports[1].BindingHostKnown = "DOWN", true
				return v
			},
			opts: TrustOptions{ProjectID: "proj"}, trusted: []string{"10.0.0.5", "203.0.113.5"},
			untrusted: map[string]string{"10.0.0.66": "bound to no host"}},
		{name: "a DOWN port bound to a host (OVN cannot report it up) is not ready, not rejected",
			view: func() CloudView {
				v := view()
				v.Ports[0].Status, v.Ports[0].BindingHostKnown, v.Ports[0].BindingHostID = "DOWN", true, "compute-1"
				return v
			},
			opts:     TrustOptions{ProjectID: "proj"},
			notReady: map[string]string{"10.0.0.5": "not ACTIVE", "203.0.113.5": "floating IP fip-1 is on port port-1"}},
		{name: "a DOWN port of another project is rejected: no status change makes it the cluster's",
			view:      func() CloudView { v := view(); v.Ports[0].Status, v.Ports[0].ProjectID = "DOWN", "other"; return v },
			opts:      TrustOptions{ProjectID: "proj"},
			untrusted: map[string]string{"10.0.0.5": `belongs to project "other"`, "203.0.113.5": "not on a trusted port"}},
		{name: "a forbidden address on a DOWN port is rejected, not left to wait",
			view: func() CloudView {
				v := addNIC(view(), "net-svc", "svc", "proj", "10.96.0.10")
				v.Ports[1].Status = "DOWN"
				return v
			},
			opts: TrustOptions{ProjectID: "proj", Forbidden: []Range{serviceCIDR}}, trusted: []string{"10.0.0.5", "203.0.113.5"},
			untrusted: map[string]string{"10.96.0.10": "Service CIDR"}},
		{name: "an ACTIVE port that an administrator's answer shows bound to no host is not trusted",
			view: func() CloudView {
				v := addNIC(view(), "net-b", "b", "proj", "10.3.0.5")
				v.Ports[1].BindingHostKnown = true
				return v
			},
			opts: TrustOptions{ProjectID: "proj"}, trusted: []string{"10.0.0.5", "203.0.113.5"},
			untrusted: map[string]string{"10.3.0.5": "bound to no host"}},
		{name: "a floating IP on a DOWN port is not trusted yet either",
			view:     func() CloudView { v := view(); v.Ports[0].Status = "DOWN"; return v },
			opts:     TrustOptions{ProjectID: "proj"},
			notReady: map[string]string{"10.0.0.5": "not ACTIVE", "203.0.113.5": "not ACTIVE"}},
		{name: "another project's floating IP on a DOWN port of the server is rejected",
			view: func() CloudView {
				v := view()
				v.Ports[0].Status, v.FloatingIPs[0].ProjectID = "DOWN", "other"
				return v
			},
			opts:      TrustOptions{ProjectID: "proj"},
			notReady:  map[string]string{"10.0.0.5": "not ACTIVE"},
			untrusted: map[string]string{"203.0.113.5": "not on a trusted port"}},
		{name: "a link-local fixed IP is forbidden",
			view: func() CloudView { return addNIC(view(), "net-ll", "ll", "proj", "169.254.1.1") },
			opts: TrustOptions{ProjectID: "proj"}, trusted: []string{"10.0.0.5", "203.0.113.5"},
			untrusted: map[string]string{"169.254.1.1": "link-local"}},
		{name: "a port of another project is not trusted",
			view:      func() CloudView { v := view(); v.Ports[0].ProjectID = "other"; return v },
			opts:      TrustOptions{ProjectID: "proj"},
			untrusted: map[string]string{"10.0.0.5": `belongs to project "other"`, "203.0.113.5": "not on a trusted port"}},
		{name: "a network another project owns (and did not share) is not trusted",
			view: func() CloudView { return addNIC(view(), "net-x", "private2", "other", "10.1.0.5") },
			opts: TrustOptions{ProjectID: "proj"}, trusted: []string{"10.0.0.5", "203.0.113.5"},
			untrusted: map[string]string{"10.1.0.5": `of project "other"`}},
		{name: "a shared provider network is trusted",
			view: func() CloudView {
				v := addNIC(view(), "net-prov", "provider", "admin", "172.16.0.5")
				v.Networks[1].Shared = true
				return v
			},
			opts: TrustOptions{ProjectID: "proj"}, trusted: []string{"10.0.0.5", "172.16.0.5", "203.0.113.5"}},
		{name: "with network IDs configured, a same-named network of the project is not trusted",
			view: func() CloudView { return addNIC(view(), "net-evil", "private", "proj", "10.0.0.99") },
			opts: TrustOptions{ProjectID: "proj", NetworkIDs: []string{"net-private"}}, trusted: []string{"10.0.0.5", "203.0.113.5"},
			untrusted: map[string]string{"10.0.0.99": "not one of the trusted network IDs"}},
		{name: "with internal network names, a port on another network is not trusted (the CCM does not publish it either)",
			view: func() CloudView { return addNIC(view(), "net-mgmt", "mgmt", "proj", "10.2.0.5") },
			opts: TrustOptions{ProjectID: "proj", Options: Options{InternalNetworkNames: []string{"private"}}}, trusted: []string{"10.0.0.5", "203.0.113.5"},
			untrusted: map[string]string{"10.2.0.5": "not one of the configured networks"}},
		{name: "an address Nova lists but no port of the server carries is not trusted",
			view: func() CloudView {
				v := view()
				v.Server.Addresses["private"] = append(v.Server.Addresses["private"], openstack.ServerAddress{Addr: "10.0.0.77", Version: 4, Type: openstack.AddressFixed})
				return v
			},
			opts: TrustOptions{ProjectID: "proj"}, trusted: []string{"10.0.0.5", "203.0.113.5"},
			untrusted: map[string]string{"10.0.0.77": "not a fixed IP of a trusted port"}},
		{name: "a floating IP of another project is not trusted",
			view: func() CloudView { v := view(); v.FloatingIPs[0].ProjectID = "other"; return v },
			opts: TrustOptions{ProjectID: "proj"}, trusted: []string{"10.0.0.5"},
			untrusted: map[string]string{"203.0.113.5": `belongs to project "other"`}},
		{name: "IPv6 disabled: a port's IPv6 address is not trusted since the CCM does not publish it",
			view: func() CloudView { return addNIC(view(), "net-v6", "v6", "proj", "2001:db8::5") },
			opts: TrustOptions{ProjectID: "proj", Options: Options{IPv6Disabled: true}}, trusted: []string{"10.0.0.5", "203.0.113.5"},
			untrusted: map[string]string{"2001:db8::5": "not an address the CCM publishes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Trusted(tt.view(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var trusted []string
			for _, ip := range got.Trusted {
				trusted = append(trusted, ip.String())
			}
			if !slices.Equal(trusted, tt.trusted) {
				t.Errorf("trusted %v, want %v (untrusted: %v)", trusted, tt.trusted, got.Untrusted)
			}
			for ip, want := range tt.untrusted {
				why, ok := got.Untrusted[netip.MustParseAddr(ip)]
				if !ok || !strings.Contains(why, want) {
					t.Errorf("untrusted[%s] = %q, want it to contain %q", ip, why, want)
				}
			}
			for ip, want := range tt.notReady {
				why, ok := got.NotReady[netip.MustParseAddr(ip)]
				if !ok || !strings.Contains(why, want) {
					t.Errorf("notReady[%s] = %q, want it to contain %q (untrusted: %v)", ip, why, want, got.Untrusted)
				}
			}
			if len(got.NotReady) != len(tt.notReady) {
				t.Errorf("not ready %v, want exactly %v", got.NotReady, tt.notReady)
			}
			for _, ip := range got.Trusted {
				if !slices.ContainsFunc(got.Published, func(a corev1.NodeAddress) bool { return a.Address == ip.String() }) {
					t.Errorf("trusted %s is not published by the CCM: the approver must trust a subset", ip)
				}
			}
		})
	}
}

func TestTrustedFailsClosedOnAnAnswerItCannotRead(t *testing.T) {
	v := view()
	v.Networks = nil
	if _, err := Trusted(v, TrustOptions{ProjectID: "proj"}); err == nil {
		t.Error("a port whose network Neutron did not describe was decided on; want an error")
	}
	v = view()
	v.Ports[0].FixedIPs[0].IPAddress = "not-an-ip"
	if _, err := Trusted(v, TrustOptions{ProjectID: "proj"}); err == nil {
		t.Error("a port with an invalid fixed IP was decided on; want an error")
	}
}

func TestForbiddenNamesEverySpecialRange(t *testing.T) {
	for ip, want := range map[string]string{
		"0.0.0.0": "unspecified", "::": "unspecified", "127.0.0.1": "loopback", "::1": "loopback",
		"169.254.169.254": "link-local", "fe80::1": "link-local", "224.0.0.1": "multicast", "ff02::1": "multicast",
		"255.255.255.255": "broadcast", "::ffff:127.0.0.1": "loopback",
	} {
		why, bad := Forbidden(netip.MustParseAddr(ip), nil)
		if !bad || !strings.Contains(why, want) {
			t.Errorf("Forbidden(%s) = %q, %v; want %s", ip, why, bad, want)
		}
	}
	if why, bad := Forbidden(netip.MustParseAddr("10.0.0.5"), nil); bad {
		t.Errorf("Forbidden(10.0.0.5) = %q; an ordinary address is not forbidden", why)
	}
}
