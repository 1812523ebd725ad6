package cloudsim

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/attachinterfaces"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/availabilityzones"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

func computeClient(t testing.TB, authURL string) *gophercloud.ServiceClient {
	t.Helper()
	c, err := openstack.NewComputeV2(provider(t, demoAuth(authURL)), gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil {
		t.Fatalf("compute client: %v", err)
	}
	return c
}

func TestServerListing(t *testing.T) {
	sim, authURL := startSim(t, Options{})
	for i := 0; i < 25; i++ {
		if _, err := sim.CreateServer(ServerSpec{Name: fmt.Sprintf("worker-%02d", i), NICs: []NICSpec{{Network: "private"}}}); err != nil {
			t.Fatal(err)
		}
	}
	compute := computeClient(t, authURL)
	tests := []struct {
		name      string
		opts      servers.ListOpts
		wantNames int
		wantPages int
		wantFirst string
	}{
		{name: "all servers fit one page without a limit", opts: servers.ListOpts{}, wantNames: 28, wantPages: 1},
		{name: "a limit pages through servers_links", opts: servers.ListOpts{Limit: 10}, wantNames: 28, wantPages: 3},
		{name: "the name filter is a regular expression", opts: servers.ListOpts{Name: "^worker-1[0-4]$"}, wantNames: 5, wantPages: 1},
		{name: "the name filter matches anywhere in the name", opts: servers.ListOpts{Name: "ode-"}, wantNames: 2, wantPages: 1},
		{name: "the status filter selects shut off servers", opts: servers.ListOpts{Status: "SHUTOFF"}, wantNames: 1, wantPages: 1, wantFirst: "master-1"},
		{name: "newest servers come first", opts: servers.ListOpts{Limit: 1}, wantNames: 28, wantPages: 28, wantFirst: "worker-24"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var names []string
			pages := 0
			err := servers.List(compute, tt.opts).EachPage(ctxT(t), func(_ context.Context, p pagination.Page) (bool, error) {
				pages++
				ss, err := servers.ExtractServers(p)
				for _, s := range ss {
					names = append(names, s.Name)
				}
				return true, err
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(names) != tt.wantNames || pages != tt.wantPages {
				t.Fatalf("got %d servers in %d pages, want %d in %d: %v", len(names), pages, tt.wantNames, tt.wantPages, names)
			}
			if tt.wantFirst != "" && names[0] != tt.wantFirst {
				t.Fatalf("first server %q, want %q", names[0], tt.wantFirst)
			}
			seen := map[string]bool{}
			for _, n := range names {
				if seen[n] {
					t.Fatalf("server %q listed twice", n)
				}
				seen[n] = true
			}
		})
	}
	if sim.Calls()["compute.servers.detail"] == 0 {
		t.Fatal("compute.servers.detail was not counted")
	}
}

func TestServerView(t *testing.T) {
	sim, authURL := startSim(t, Options{})
	compute := computeClient(t, authURL)
	node, _ := sim.ServerByName("node-1")

	t.Run("addresses come from Neutron ports with fixed and floating types", func(t *testing.T) {
		s, err := servers.Get(ctxT(t), compute, node.ID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		priv, _ := s.Addresses["private"].([]any)
		var got []string
		for _, a := range priv {
			m := a.(map[string]any)
			got = append(got, fmt.Sprintf("%s/%s/%v/%t", m["addr"], m["OS-EXT-IPS:type"], m["version"], m["OS-EXT-IPS-MAC:mac_addr"] != ""))
		}
		sort.Strings(got)
		if len(got) != 2 || got[0] != "10.0.0.11/fixed/4/true" || got[1][:11] != "203.0.113.3" {
			t.Fatalf("addresses = %v", got)
		}
		if s.AvailabilityZone != "nova" || s.Metadata["role"] != "worker" || s.LaunchedAt.IsZero() || s.Flavor["id"] != "1" {
			t.Fatalf("server = %+v", s)
		}
	})
	t.Run("microversion 2.47 embeds the flavor with original_name", func(t *testing.T) {
		c := *compute
		c.Microversion = "2.47"
		s, err := servers.Get(ctxT(t), &c, node.ID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if s.Flavor["original_name"] != "m1.small" || s.Flavor["vcpus"] != float64(1) {
			t.Fatalf("flavor = %v", s.Flavor)
		}
	})
	t.Run("an unsupported microversion is refused with 406", func(t *testing.T) {
		c := *compute
		c.Microversion = "2.999"
		_, err := servers.Get(ctxT(t), &c, node.ID).Extract()
		if !gophercloud.ResponseCodeIs(err, 406) {
			t.Fatalf("want 406, got %v", err)
		}
	})
	t.Run("interface attachments list the server's ports", func(t *testing.T) {
		pages, err := attachinterfaces.List(compute, node.ID).AllPages(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		ifs, _ := attachinterfaces.ExtractInterfaces(pages)
		if len(ifs) != 1 || ifs[0].FixedIPs[0].IPAddress != "10.0.0.11" || ifs[0].PortID != node.PortIDs[0] {
			t.Fatalf("interfaces = %+v", ifs)
		}
	})
	t.Run("availability zones are listed", func(t *testing.T) {
		pages, err := availabilityzones.List(compute).AllPages(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		azs, _ := availabilityzones.ExtractAvailabilityZones(pages)
		if len(azs) != 2 || azs[0].ZoneName != "nova" || !azs[0].ZoneState.Available {
			t.Fatalf("azs = %+v", azs)
		}
	})
	t.Run("a deleted server answers 404 itemNotFound", func(t *testing.T) {
		if err := sim.DeleteServer(node.ID); err != nil {
			t.Fatal(err)
		}
		_, err := servers.Get(ctxT(t), compute, node.ID).Extract()
		if !gophercloud.ResponseCodeIs(err, 404) {
			t.Fatalf("want 404, got %v", err)
		}
	})
	t.Run("stop and start go through SHUTOFF", func(t *testing.T) {
		n2, _ := sim.ServerByName("node-2")
		if err := servers.Stop(ctxT(t), compute, n2.ID).ExtractErr(); err != nil {
			t.Fatal(err)
		}
		if s, _ := servers.Get(ctxT(t), compute, n2.ID).Extract(); s.Status != "SHUTOFF" {
			t.Fatalf("status %q after stop", s.Status)
		}
		if err := servers.Stop(ctxT(t), compute, n2.ID).ExtractErr(); !gophercloud.ResponseCodeIs(err, 409) {
			t.Fatalf("stopping a stopped server: want 409, got %v", err)
		}
		if err := servers.Start(ctxT(t), compute, n2.ID).ExtractErr(); err != nil {
			t.Fatal(err)
		}
		if got, _ := sim.GetServer(n2.ID); got.Status != "ACTIVE" {
			t.Fatalf("status %q after start", got.Status)
		}
	})
}

func TestNovaCreateAndMetadata(t *testing.T) {
	sim, authURL := startSim(t, Options{BuildDelay: 100 * time.Millisecond})
	compute := computeClient(t, authURL)
	ctx := ctxT(t)
	sim.mu.RLock()
	privateID := sim.state.networkRef("private").ID
	sim.mu.RUnlock()

	created, err := servers.Create(ctx, compute, servers.CreateOpts{Name: "api-vm", FlavorRef: "2", ImageRef: "5d0f8f3c-5e1e-4c1a-9b1e-0c0d5a1e0001",
		Networks: []servers.Network{{UUID: privateID, FixedIP: "10.0.0.200"}}, Metadata: map[string]string{"a": "1"}}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a server created through Nova builds, then becomes ACTIVE", func(t *testing.T) {
		if err := servers.WaitForStatus(ctx, compute, created.ID, "ACTIVE"); err != nil {
			t.Fatal(err)
		}
		s, _ := servers.Get(ctx, compute, created.ID).Extract()
		if s.Metadata["a"] != "1" || s.Flavor["id"] != "2" || s.LaunchedAt.IsZero() {
			t.Fatalf("server = %+v", s)
		}
	})
	t.Run("its addresses are listed by network", func(t *testing.T) {
		pages, err := servers.ListAddresses(compute, created.ID).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		addrs, _ := servers.ExtractAddresses(pages)
		if len(addrs["private"]) != 1 || addrs["private"][0].Address != "10.0.0.200" {
			t.Fatalf("addresses = %+v", addrs)
		}
	})
	t.Run("metadata updates merge and resets replace", func(t *testing.T) {
		md, err := servers.UpdateMetadata(ctx, compute, created.ID, servers.MetadataOpts{"b": "2"}).Extract()
		if err != nil || md["a"] != "1" || md["b"] != "2" {
			t.Fatalf("after update: %v, %v", md, err)
		}
		md, err = servers.ResetMetadata(ctx, compute, created.ID, servers.MetadataOpts{"c": "3"}).Extract()
		if err != nil || len(md) != 1 || md["c"] != "3" {
			t.Fatalf("after reset: %v, %v", md, err)
		}
	})
	t.Run("deleting through Nova removes the server and its ports", func(t *testing.T) {
		if err := servers.Delete(ctx, compute, created.ID).ExtractErr(); err != nil {
			t.Fatal(err)
		}
		if _, ok := sim.GetServer(created.ID); ok {
			t.Fatal("server still exists")
		}
		sim.mu.RLock()
		n := len(sim.state.portsByDev[created.ID])
		sim.mu.RUnlock()
		if n != 0 {
			t.Fatalf("%d ports left", n)
		}
	})
	t.Run("a request without a token gets Keystone's 401", func(t *testing.T) {
		c := *compute
		pc := *compute.ProviderClient
		pc.ReauthFunc = nil
		pc.SetToken("bogus")
		c.ProviderClient = &pc
		_, err := servers.Get(ctx, &c, created.ID).Extract()
		if !gophercloud.ResponseCodeIs(err, 401) {
			t.Fatalf("want 401, got %v", err)
		}
	})
}
