package openstack_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/openstack"
)

// These tests run the real gophercloud adapters against the simulator.

func simSeed() *cloudsim.Seed {
	sd := cloudsim.DefaultSeed()
	sd.ApplicationCredentials = []cloudsim.SeedAppCred{{ID: "ac-1", Name: "ccm", Secret: "s3cret", User: "demo"}}
	sd.AvailabilityZones = []string{"nova", "az2"}
	sd.Servers = []cloudsim.ServerSpec{
		{Name: "node-1", Flavor: "m1.small", NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: "10.0.0.11", FloatingNetwork: "public"}}},
		{Name: "node-2", Flavor: "m1.medium", AZ: "az2", NICs: []cloudsim.NICSpec{{Network: "private"}}},
		{Name: "node-3", Flavor: "m1.large", Status: "SHUTOFF", NICs: []cloudsim.NICSpec{{Network: "private"}}},
	}
	return sd
}

func startSim(t *testing.T) (*cloudsim.Sim, string) {
	t.Helper()
	sim, err := cloudsim.New(cloudsim.Options{Seed: simSeed(), RandSeed: 1})
	if err != nil {
		t.Fatalf("cloudsim.New: %v", err)
	}
	authURL, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatalf("cloudsim Start: %v", err)
	}
	t.Cleanup(stop)
	return sim, authURL
}

func simClients(t *testing.T, g config.Global) *openstack.Clients {
	t.Helper()
	return simClientsWith(t, g, openstack.ClientOptions{HTTPTimeout: 5 * time.Second})
}

func simClientsWith(t *testing.T, g config.Global, opts openstack.ClientOptions) *openstack.Clients {
	t.Helper()
	cfg := config.Defaults()
	cfg.Global = g
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts.Retry = openstack.RetryPolicy{MaxAttempts: 4, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	c, err := openstack.NewClients(ctx, cfg, opts)
	if err != nil {
		t.Fatalf("NewClients: %v", err)
	}
	return c
}

func demoGlobal(authURL string) config.Global {
	return config.Global{AuthURL: authURL, Username: "demo", Password: "secret", DomainName: "Default", TenantName: "demo"}
}

func simCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSimNodesHaveTheSimulatorsAddresses(t *testing.T) {
	sim, authURL := startSim(t)
	c := simClients(t, demoGlobal(authURL))
	ctx := simCtx(t)

	for _, name := range []string{"node-1", "node-2", "node-3"} {
		t.Run(name, func(t *testing.T) {
			want, ok := sim.ServerByName(name)
			if !ok {
				t.Fatalf("the simulator has no %s", name)
			}
			byName, err := openstack.ServerForNode(ctx, c.Compute, "", name)
			if err != nil {
				t.Fatalf("by name: %v", err)
			}
			byID, err := openstack.ServerForNode(ctx, c.Compute, openstack.ProviderID("", want.ID), "")
			if err != nil {
				t.Fatalf("by providerID: %v", err)
			}
			if !reflect.DeepEqual(byName, byID) {
				t.Errorf("by name %+v\nby ID   %+v", byName, byID)
			}
			if byID.ID != want.ID || byID.Status != want.Status || byID.FlavorName != want.Flavor || byID.AvailabilityZone != want.AZ {
				t.Errorf("server %+v, simulator says %+v", byID, want)
			}
			got, err := nodeaddress.For(byID, nil, nodeaddress.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var wantAddrs []corev1.NodeAddress
			for _, a := range want.Addresses {
				if a.Type == openstack.AddressFixed {
					wantAddrs = append(wantAddrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a.IP})
				}
			}
			for _, a := range want.Addresses {
				if a.Type == openstack.AddressFloating {
					wantAddrs = append(wantAddrs, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: a.IP})
				}
			}
			wantAddrs = append(wantAddrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: name})
			if !reflect.DeepEqual(got, wantAddrs) {
				t.Errorf("addresses %v, want %v", got, wantAddrs)
			}

			ports, err := c.Network.ListPorts(ctx, want.ID)
			if err != nil {
				t.Fatalf("ListPorts: %v", err)
			}
			var portIDs []string
			for _, p := range ports {
				portIDs = append(portIDs, p.ID)
				if p.DeviceID != want.ID {
					t.Errorf("port %s belongs to %s", p.ID, p.DeviceID)
				}
			}
			slices.Sort(portIDs)
			wantPorts := slices.Sorted(slices.Values(want.PortIDs))
			if !reflect.DeepEqual(portIDs, wantPorts) {
				t.Errorf("ports %v, want %v", portIDs, wantPorts)
			}
		})
	}
}

func TestSimApplicationCredential(t *testing.T) {
	_, authURL := startSim(t)
	c := simClients(t, config.Global{AuthURL: authURL, ApplicationCredentialID: "ac-1", ApplicationCredentialSecret: "s3cret"})
	if _, err := openstack.ServerForNode(simCtx(t), c.Compute, "", "node-1"); err != nil {
		t.Fatalf("lookup with an application credential: %v", err)
	}
}

func TestSimFailuresKeepTheirMeaning(t *testing.T) {
	sim, authURL := startSim(t)
	c := simClients(t, demoGlobal(authURL))
	ctx := simCtx(t)
	node1, _ := sim.ServerByName("node-1")
	node2, _ := sim.ServerByName("node-2")

	t.Run("two 503s are ridden out with retries", func(t *testing.T) {
		sim.ResetCalls()
		if err := sim.SetFault(cloudsim.FaultRule{Service: cloudsim.ServiceCompute, Operation: "servers.get", Status: 503, Times: 2}); err != nil {
			t.Fatal(err)
		}
		defer sim.ClearFaults()
		s, err := c.Compute.GetServer(ctx, node1.ID)
		if err != nil || s.ID != node1.ID {
			t.Fatalf("GetServer = %+v, %v", s, err)
		}
		if n := sim.Calls()["compute.servers.get"]; n != 3 {
			t.Errorf("%d GETs, want 3", n)
		}
	})
	t.Run("a lasting outage is an error that is not not-found", func(t *testing.T) {
		if err := sim.SetFault(cloudsim.FaultRule{Service: cloudsim.ServiceCompute, Status: 503}); err != nil {
			t.Fatal(err)
		}
		defer sim.ClearFaults()
		_, err := openstack.ServerForNode(ctx, c.Compute, openstack.ProviderID("", node1.ID), "")
		if err == nil || openstack.IsNotFound(err) {
			t.Fatalf("err = %v; want an error that is not not-found", err)
		}
		_, err = openstack.ServerForNode(ctx, c.Compute, "", "node-1")
		if err == nil || openstack.IsNotFound(err) {
			t.Fatalf("by name: err = %v; want an error that is not not-found", err)
		}
	})
	t.Run("a proxy's 404 without a request ID is not not-found", func(t *testing.T) {
		if err := sim.SetFault(cloudsim.FaultRule{Service: cloudsim.ServiceCompute, Operation: "servers.get", Status: 404, NoRequestID: true}); err != nil {
			t.Fatal(err)
		}
		defer sim.ClearFaults()
		_, err := c.Compute.GetServer(ctx, node1.ID)
		if err == nil || errors.Is(err, openstack.ErrNotFound) {
			t.Fatalf("err = %v; want an error that is not ErrNotFound", err)
		}
	})
	t.Run("a deleted server is not found", func(t *testing.T) {
		if err := sim.DeleteServer(node2.ID); err != nil {
			t.Fatal(err)
		}
		_, err := c.Compute.GetServer(ctx, node2.ID)
		if !errors.Is(err, openstack.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
		if _, err := openstack.ServerForNode(ctx, c.Compute, "", "node-2"); !errors.Is(err, openstack.ErrNotFound) {
			t.Fatalf("by name: err = %v, want ErrNotFound", err)
		}
	})
	t.Run("revoked tokens are renewed", func(t *testing.T) {
		sim.RevokeTokens()
		if _, err := c.Compute.GetServer(ctx, node1.ID); err != nil {
			t.Fatalf("GetServer after revocation: %v", err)
		}
	})
}

func TestSimServerCacheSyncsNodesWithOneListing(t *testing.T) {
	sim, authURL := startSim(t)
	c := simClients(t, demoGlobal(authURL))
	ctx := simCtx(t)
	cache := openstack.NewServerCache(c.Compute, time.Minute)
	sim.ResetCalls()
	for _, s := range sim.Servers() {
		if _, err := openstack.ServerForNode(ctx, cache, openstack.ProviderID("", s.ID), ""); err != nil {
			t.Fatal(err)
		}
		if _, err := openstack.ServerForNode(ctx, cache, "", s.Name); err != nil {
			t.Fatal(err)
		}
	}
	calls := sim.Calls()
	if calls["compute.servers.detail"] != 1 || calls["compute.servers.get"] != 0 || calls["compute.servers.list"] != 0 || calls["compute.flavors.get"] != 0 {
		t.Errorf("calls = %v; want one servers/detail and nothing else from Nova", calls)
	}
}

func TestSimNamesMatchExactlyAndNeverGuess(t *testing.T) {
	sim, authURL := startSim(t)
	c := simClients(t, demoGlobal(authURL))
	ctx := simCtx(t)
	for _, spec := range []cloudsim.ServerSpec{
		{Name: "twin", NICs: []cloudsim.NICSpec{{Network: "private"}}},
		{Name: "twin", NICs: []cloudsim.NICSpec{{Network: "private"}}},
		{Name: "nodeX1", NICs: []cloudsim.NICSpec{{Network: "private"}}},
		{Name: "node.1", NICs: []cloudsim.NICSpec{{Network: "private"}}},
	} {
		if _, err := sim.CreateServer(spec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := openstack.ServerForNode(ctx, c.Compute, "", "twin"); !errors.Is(err, openstack.ErrAmbiguous) {
		t.Errorf("two servers named twin: err = %v, want ErrAmbiguous", err)
	}
	dot, _ := sim.ServerByName("node.1")
	if s, err := openstack.ServerForNode(ctx, c.Compute, "", "node.1"); err != nil || s.ID != dot.ID {
		t.Errorf("node.1 = %+v, %v; want %s and not nodeX1", s, err, dot.ID)
	}
	if _, err := openstack.ServerForNode(ctx, c.Compute, "", "node"); !errors.Is(err, openstack.ErrNotFound) {
		t.Errorf("a prefix of names: err = %v, want ErrNotFound", err)
	}
}

func TestSimAHungRequestTimesOutAndIsRetried(t *testing.T) {
	sim, authURL := startSim(t)
	reg := prometheus.NewRegistry()
	c := simClientsWith(t, demoGlobal(authURL), openstack.ClientOptions{HTTPTimeout: 300 * time.Millisecond, Registerer: reg})
	node1, _ := sim.ServerByName("node-1")
	if err := sim.SetFault(cloudsim.FaultRule{Service: cloudsim.ServiceCompute, Operation: "servers.get", Hang: true, Times: 1}); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compute.GetServer(simCtx(t), node1.ID)
	if err != nil || s.ID != node1.ID {
		t.Fatalf("GetServer = %+v, %v", s, err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	timeouts := 0.0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if f.GetName() == "stackward_cloud_request_errors_total" && labels["operation"] == "get_server" && labels["code"] == "timeout" {
				timeouts += m.GetCounter().GetValue()
			}
		}
	}
	if timeouts != 1 {
		t.Errorf("timeouts counted = %v, want 1", timeouts)
	}
}
