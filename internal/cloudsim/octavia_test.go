package cloudsim

import (
	"context"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

type lbEnv struct {
	sim      *Sim
	lb, net  *gophercloud.ServiceClient
	subnetID string
}

func newLBEnv(t *testing.T, opts Options) lbEnv {
	t.Helper()
	sim, authURL := startSim(t, opts)
	pc := provider(t, demoAuth(authURL))
	lbc, err := openstack.NewLoadBalancerV2(pc, gophercloudRegion())
	if err != nil {
		t.Fatal(err)
	}
	netc, err := openstack.NewNetworkV2(pc, gophercloudRegion())
	if err != nil {
		t.Fatal(err)
	}
	pages, err := subnets.List(netc, subnets.ListOpts{Name: "private-subnet"}).AllPages(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	sns, _ := subnets.ExtractSubnets(pages)
	return lbEnv{sim: sim, lb: lbc, net: netc, subnetID: sns[0].ID}
}

// waitLB polls (with a deadline) until the LB reaches want, or 404s when want is "".
func waitLB(t *testing.T, c *gophercloud.ServiceClient, id, want string) *loadbalancers.LoadBalancer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		lb, err := loadbalancers.Get(ctx, c, id).Extract()
		if want == "" && gophercloud.ResponseCodeIs(err, 404) {
			return nil
		}
		if err == nil && lb.ProvisioningStatus == want {
			return lb
		}
		select {
		case <-ctx.Done():
			t.Fatalf("load balancer %s never reached %q (last: %+v, %v)", id, want, lb, err)
		case <-tick.C:
		}
	}
}

func fullLBOpts(subnetID string, members ...string) loadbalancers.CreateOpts {
	var ms []pools.CreateMemberOpts
	for _, m := range members {
		ms = append(ms, pools.CreateMemberOpts{Address: m, ProtocolPort: 30080})
	}
	return loadbalancers.CreateOpts{Name: "svc-a", VipSubnetID: subnetID, Tags: []string{"kube_service_x"},
		Listeners: []listeners.CreateOpts{{Name: "http", Protocol: listeners.ProtocolTCP, ProtocolPort: 80,
			DefaultPool: &pools.CreateOpts{Name: "pool", Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin, Members: ms,
				Monitor: &monitors.CreateOpts{Type: monitors.TypeTCP, Delay: 5, Timeout: 3, MaxRetries: 2}}}}}
}

func TestLoadBalancerLifecycle(t *testing.T) {
	env := newLBEnv(t, Options{OctaviaDelay: 300 * time.Millisecond})
	node, _ := env.sim.ServerByName("node-1")
	ctx := ctxT(t)

	created, err := loadbalancers.Create(ctx, env.lb, fullLBOpts(env.subnetID, "10.0.0.11", "10.0.0.99")).Extract()
	if err != nil {
		t.Fatal(err)
	}
	poolID := ""
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"a fully populated create answers PENDING_CREATE with the whole tree", func(t *testing.T) {
			if created.ProvisioningStatus != "PENDING_CREATE" || len(created.Listeners) != 1 || len(created.Pools) != 1 ||
				len(created.Pools[0].Members) != 2 || created.Pools[0].Monitor.ID == "" {
				t.Fatalf("created = %+v", created)
			}
			poolID = created.Pools[0].ID
		}},
		{"the VIP is a Neutron port on the subnet", func(t *testing.T) {
			p, err := ports.Get(ctx, env.net, created.VipPortID).Extract()
			if err != nil || p.FixedIPs[0].IPAddress != created.VipAddress || p.FixedIPs[0].SubnetID != env.subnetID {
				t.Fatalf("VIP port = %+v, %v", p, err)
			}
		}},
		{"a child change while PENDING_CREATE is a 409", func(t *testing.T) {
			_, err := pools.CreateMember(ctx, env.lb, poolID, pools.CreateMemberOpts{Address: "10.0.0.12", ProtocolPort: 30080}).Extract()
			if !gophercloud.ResponseCodeIs(err, 409) {
				t.Fatalf("want 409, got %v", err)
			}
		}},
		{"the load balancer becomes ACTIVE and ONLINE", func(t *testing.T) {
			lb := waitLB(t, env.lb, created.ID, "ACTIVE")
			if lb.OperatingStatus != "ONLINE" {
				t.Fatalf("operating status %q", lb.OperatingStatus)
			}
		}},
		{"monitored members are ONLINE only when a live server has the address", func(t *testing.T) {
			pages, err := pools.ListMembers(env.lb, poolID, pools.ListMembersOpts{}).AllPages(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ms, _ := pools.ExtractMembers(pages)
			got := map[string]string{}
			for _, m := range ms {
				got[m.Address] = m.OperatingStatus
			}
			if got["10.0.0.11"] != "ONLINE" || got["10.0.0.99"] != "ERROR" {
				t.Fatalf("member operating status = %v (node-1 is %s)", got, node.ID)
			}
		}},
		{"a batch member update answers 202 and replaces the members", func(t *testing.T) {
			err := pools.BatchUpdateMembers(ctx, env.lb, poolID, []pools.BatchUpdateMemberOpts{{Address: "10.0.0.12", ProtocolPort: 30080}}).ExtractErr()
			if err != nil {
				t.Fatal(err)
			}
			if lb, _ := loadbalancers.Get(ctx, env.lb, created.ID).Extract(); lb.ProvisioningStatus != "PENDING_UPDATE" {
				t.Fatalf("LB status after batch update: %q", lb.ProvisioningStatus)
			}
			waitLB(t, env.lb, created.ID, "ACTIVE")
			pages, _ := pools.ListMembers(env.lb, poolID, pools.ListMembersOpts{}).AllPages(ctx)
			ms, _ := pools.ExtractMembers(pages)
			if len(ms) != 1 || ms[0].Address != "10.0.0.12" {
				t.Fatalf("members = %+v", ms)
			}
		}},
		{"deleting a load balancer with children needs cascade", func(t *testing.T) {
			err := loadbalancers.Delete(ctx, env.lb, created.ID, loadbalancers.DeleteOpts{}).ExtractErr()
			if !gophercloud.ResponseCodeIs(err, 400) {
				t.Fatalf("want 400, got %v", err)
			}
		}},
		{"a cascade delete removes the tree and the VIP port", func(t *testing.T) {
			if err := loadbalancers.Delete(ctx, env.lb, created.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
				t.Fatal(err)
			}
			waitLB(t, env.lb, created.ID, "")
			if _, err := pools.Get(ctx, env.lb, poolID).Extract(); !gophercloud.ResponseCodeIs(err, 404) {
				t.Fatalf("pool after cascade delete: %v", err)
			}
			if _, err := ports.Get(ctx, env.net, created.VipPortID).Extract(); !gophercloud.ResponseCodeIs(err, 404) {
				t.Fatalf("VIP port after cascade delete: %v", err)
			}
		}},
	}
	for _, st := range steps {
		if !t.Run(st.name, st.run) {
			t.FailNow()
		}
	}
}

func TestLoadBalancerErrorsAndQuota(t *testing.T) {
	sd := testSeed()
	sd.LoadBalancerQuota = 1
	env := newLBEnv(t, Options{Seed: sd})
	ctx := ctxT(t)
	if err := env.sim.SetFault(FaultRule{Service: ServiceLoadBalancer, Operation: "provisioning", Times: 1}); err != nil {
		t.Fatal(err)
	}
	lb, err := loadbalancers.Create(ctx, env.lb, loadbalancers.CreateOpts{Name: "one", VipSubnetID: env.subnetID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("an injected provisioning fault ends in ERROR", func(t *testing.T) {
		waitLB(t, env.lb, lb.ID, "ERROR")
	})
	t.Run("the project's quota refuses a second load balancer with 403", func(t *testing.T) {
		_, err := loadbalancers.Create(ctx, env.lb, loadbalancers.CreateOpts{Name: "two", VipSubnetID: env.subnetID}).Extract()
		if !gophercloud.ResponseCodeIs(err, 403) {
			t.Fatalf("want 403, got %v", err)
		}
	})
	t.Run("an unknown VIP subnet is a 400", func(t *testing.T) {
		env.sim.mu.Lock()
		env.sim.state.lbQuota = 0
		env.sim.mu.Unlock()
		_, err := loadbalancers.Create(ctx, env.lb, loadbalancers.CreateOpts{Name: "x", VipSubnetID: "nope"}).Extract()
		if !gophercloud.ResponseCodeIs(err, 400) {
			t.Fatalf("want 400, got %v", err)
		}
	})
	t.Run("a load balancer in ERROR can be deleted", func(t *testing.T) {
		if err := loadbalancers.Delete(ctx, env.lb, lb.ID, loadbalancers.DeleteOpts{}).ExtractErr(); err != nil {
			t.Fatal(err)
		}
		waitLB(t, env.lb, lb.ID, "")
	})
}
