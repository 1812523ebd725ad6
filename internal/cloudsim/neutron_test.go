package cloudsim

import (
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

func networkClient(t testing.TB, authURL string) *gophercloud.ServiceClient {
	t.Helper()
	c, err := openstack.NewNetworkV2(provider(t, demoAuth(authURL)), gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil {
		t.Fatalf("network client: %v", err)
	}
	return c
}

func listPorts(t *testing.T, c *gophercloud.ServiceClient, opts ports.ListOpts) []ports.Port {
	t.Helper()
	pages, err := ports.List(c, opts).AllPages(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ports.ExtractPorts(pages)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestPorts(t *testing.T) {
	sim, authURL := startSim(t, Options{})
	net := networkClient(t, authURL)
	node, _ := sim.ServerByName("node-1")
	node2, _ := sim.ServerByName("node-2")

	tests := []struct {
		name string
		opts ports.ListOpts
		want int
	}{
		{name: "ports by device_id are the server's ports", opts: ports.ListOpts{DeviceID: node.ID}, want: 1},
		{name: "an unknown device has no ports", opts: ports.ListOpts{DeviceID: "nope"}, want: 0},
		{name: "ports by fixed IP", opts: ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: "10.0.0.11"}}}, want: 1},
		{name: "router interfaces by device owner", opts: ports.ListOpts{DeviceOwner: "network:router_interface"}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := listPorts(t, net, tt.opts); len(got) != tt.want {
				t.Fatalf("got %d ports, want %d: %+v", len(got), tt.want, got)
			}
		})
	}

	t.Run("ports by network ID page with ports_links", func(t *testing.T) {
		nets, err := networks.List(net, networks.ListOpts{Name: "private"}).AllPages(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		ns, _ := networks.ExtractNetworks(nets)
		if len(ns) != 1 {
			t.Fatalf("networks named private: %d", len(ns))
		}
		got := listPorts(t, net, ports.ListOpts{NetworkID: ns[0].ID, Limit: 1})
		if len(got) != 4 { // router interface + three servers
			t.Fatalf("got %d ports on private, want 4", len(got))
		}
	})

	t.Run("allowed address pairs set on a port are read back", func(t *testing.T) {
		pairs := []ports.AddressPair{{IPAddress: "10.244.1.0/24"}}
		p, err := ports.Update(ctxT(t), net, node2.PortIDs[0], ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if len(p.AllowedAddressPairs) != 1 || p.AllowedAddressPairs[0].IPAddress != "10.244.1.0/24" || p.AllowedAddressPairs[0].MACAddress != p.MACAddress {
			t.Fatalf("pairs = %+v", p.AllowedAddressPairs)
		}
	})

	t.Run("a floating IP associated to a port shows in Nova as floating", func(t *testing.T) {
		ext, _ := networks.List(net, networks.ListOpts{Name: "public"}).AllPages(ctxT(t))
		ns, _ := networks.ExtractNetworks(ext)
		fip, err := floatingips.Create(ctxT(t), net, floatingips.CreateOpts{FloatingNetworkID: ns[0].ID, PortID: node2.PortIDs[0]}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if fip.Status != "ACTIVE" || fip.FixedIP == "" || fip.RouterID == "" {
			t.Fatalf("floating IP = %+v", fip)
		}
		got, _ := sim.GetServer(node2.ID)
		found := false
		for _, a := range got.Addresses {
			found = found || (a.Type == "floating" && a.IP == fip.FloatingIP && a.Network == "private")
		}
		if !found {
			t.Fatalf("floating IP %s missing from %+v", fip.FloatingIP, got.Addresses)
		}
		compute := computeClient(t, authURL)
		s, err := servers.Get(ctxT(t), compute, node2.ID).Extract()
		if err != nil || len(s.Addresses["private"].([]any)) != 2 {
			t.Fatalf("Nova addresses = %v, %v", s.Addresses, err)
		}
	})
}

func TestExtraRoutes(t *testing.T) {
	_, authURL := startSim(t, Options{})
	net := networkClient(t, authURL)
	pages, err := routers.List(net, routers.ListOpts{Name: "router1"}).AllPages(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := routers.ExtractRouters(pages)
	if len(rs) != 1 {
		t.Fatalf("routers named router1: %d", len(rs))
	}
	id := rs[0].ID
	r1 := routers.Route{DestinationCIDR: "10.244.1.0/24", NextHop: "10.0.0.11"}
	r2 := routers.Route{DestinationCIDR: "10.244.2.0/24", NextHop: "10.0.0.12"}

	steps := []struct {
		name    string
		add     bool
		routes  []routers.Route
		want    []routers.Route
		wantErr int
	}{
		{name: "adding two routes keeps both", add: true, routes: []routers.Route{r1, r2}, want: []routers.Route{r1, r2}},
		{name: "adding an existing route does not duplicate it", add: true, routes: []routers.Route{r1}, want: []routers.Route{r1, r2}},
		{name: "removing one route keeps the other", routes: []routers.Route{r1}, want: []routers.Route{r2}},
		{name: "a nexthop outside the router's subnets is refused", add: true,
			routes: []routers.Route{{DestinationCIDR: "10.244.3.0/24", NextHop: "192.168.7.7"}}, wantErr: 400},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			opts := extraroutes.Opts{Routes: &st.routes}
			var r *routers.Router
			var err error
			if st.add {
				r, err = extraroutes.Add(ctxT(t), net, id, opts).Extract()
			} else {
				r, err = extraroutes.Remove(ctxT(t), net, id, opts).Extract()
			}
			if st.wantErr != 0 {
				if !gophercloud.ResponseCodeIs(err, st.wantErr) {
					t.Fatalf("want %d, got %v", st.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Routes) != len(st.want) {
				t.Fatalf("routes = %+v, want %+v", r.Routes, st.want)
			}
			for i := range st.want {
				if r.Routes[i] != st.want[i] {
					t.Fatalf("routes = %+v, want %+v", r.Routes, st.want)
				}
			}
		})
	}

	t.Run("the extension list advertises atomic extra routes", func(t *testing.T) {
		pages, err := extensions.List(net).AllPages(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		exts, _ := extensions.ExtractExtensions(pages)
		have := map[string]bool{}
		for _, e := range exts {
			have[e.Alias] = true
		}
		for _, want := range []string{"extraroute", "extraroute-atomic", "allowed-address-pairs", "security-group"} {
			if !have[want] {
				t.Errorf("extension %q missing", want)
			}
		}
	})
}

func TestRouterTopology(t *testing.T) {
	_, authURL := startSim(t, Options{})
	net := networkClient(t, authURL)
	ctx := ctxT(t)
	nw, err := networks.Create(ctx, net, networks.CreateOpts{Name: "pods"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	sn, err := subnets.Create(ctx, net, subnets.CreateOpts{NetworkID: nw.ID, CIDR: "10.10.0.0/24", IPVersion: gophercloud.IPv4}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	ext, _ := networks.List(net, networks.ListOpts{Name: "public"}).AllPages(ctx)
	exts, _ := networks.ExtractNetworks(ext)
	rt, err := routers.Create(ctx, net, routers.CreateOpts{Name: "r2", GatewayInfo: &routers.GatewayInfo{NetworkID: exts[0].ID}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	route := routers.Route{DestinationCIDR: "10.244.9.0/24", NextHop: "10.10.0.9"}
	steps := []struct {
		name string
		run  func() error
		want int
	}{
		{"a route via an unattached subnet is refused", func() error {
			_, err := extraroutes.Add(ctx, net, rt.ID, extraroutes.Opts{Routes: &[]routers.Route{route}}).Extract()
			return err
		}, 400},
		{"attaching the subnet gives the router its gateway IP", func() error {
			info, err := routers.AddInterface(ctx, net, rt.ID, routers.AddInterfaceOpts{SubnetID: sn.ID}).Extract()
			if err == nil {
				p, perr := ports.Get(ctx, net, info.PortID).Extract()
				if perr != nil || p.FixedIPs[0].IPAddress != "10.10.0.1" {
					t.Fatalf("interface port = %+v, %v", p, perr)
				}
			}
			return err
		}, 0},
		{"the route is then accepted", func() error {
			_, err := extraroutes.Add(ctx, net, rt.ID, extraroutes.Opts{Routes: &[]routers.Route{route}}).Extract()
			return err
		}, 0},
		{"an interface needed by a route cannot be removed", func() error {
			_, err := routers.RemoveInterface(ctx, net, rt.ID, routers.RemoveInterfaceOpts{SubnetID: sn.ID}).Extract()
			return err
		}, 409},
		{"a router with interfaces cannot be deleted", func() error { return routers.Delete(ctx, net, rt.ID).ExtractErr() }, 409},
		{"without the route the interface goes", func() error {
			if _, err := extraroutes.Remove(ctx, net, rt.ID, extraroutes.Opts{Routes: &[]routers.Route{route}}).Extract(); err != nil {
				return err
			}
			_, err := routers.RemoveInterface(ctx, net, rt.ID, routers.RemoveInterfaceOpts{SubnetID: sn.ID}).Extract()
			return err
		}, 0},
		{"and then the router", func() error { return routers.Delete(ctx, net, rt.ID).ExtractErr() }, 0},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			err := st.run()
			if st.want == 0 && err != nil {
				t.Fatal(err)
			}
			if st.want != 0 && !gophercloud.ResponseCodeIs(err, st.want) {
				t.Fatalf("want %d, got %v", st.want, err)
			}
		})
	}
}
