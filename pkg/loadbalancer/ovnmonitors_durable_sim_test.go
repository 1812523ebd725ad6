package loadbalancer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// outsideMonitor is the health monitor a person gave the pool of a load
// balancer made outside Kubernetes: settings Stackward would not choose.
var outsideMonitor = monitors.CreateOpts{Name: "db-check", Type: monitors.TypeTCP, Delay: 11, Timeout: 4, MaxRetries: 5, MaxRetriesDown: 2}

// outsideOVNLB makes, one call at a time as a person with the CLI does, a
// load balancer on the OVN provider with a TCP listener on 9000, its pool
// (with a tag of its own) and outsideMonitor on it. It returns the load
// balancer's and the pool's IDs.
func outsideOVNLB(t *testing.T, env simEnv) (lbID, poolID string) {
	t.Helper()
	ctx := context.Background()
	lb, err := loadbalancers.Create(ctx, env.octavia, loadbalancers.CreateOpts{Name: "db", VipSubnetID: env.subnetID, Provider: loadbalancer.ProviderOVN,
		// The operator lets the Services of namespace shop use it.
		Tags: []string{"kube_shared_with=shop"}}).Extract()
	if err != nil {
		t.Fatalf("create the load balancer: %v", err)
	}
	waitActive(t, env, lb.ID)
	l, err := listeners.Create(ctx, env.octavia, listeners.CreateOpts{LoadbalancerID: lb.ID, Name: "db", Protocol: listeners.ProtocolTCP, ProtocolPort: 9000}).Extract()
	if err != nil {
		t.Fatalf("create the listener: %v", err)
	}
	waitActive(t, env, lb.ID)
	p, err := pools.Create(ctx, env.octavia, pools.CreateOpts{ListenerID: l.ID, Name: "db", Protocol: pools.ProtocolTCP,
		LBMethod: pools.LBMethodSourceIpPort, Tags: []string{"team=db"}}).Extract()
	if err != nil {
		t.Fatalf("create the pool: %v", err)
	}
	waitActive(t, env, lb.ID)
	opts := outsideMonitor
	opts.PoolID = p.ID
	if _, err := monitors.Create(ctx, env.octavia, opts).Extract(); err != nil {
		t.Fatalf("create the monitor: %v", err)
	}
	waitActive(t, env, lb.ID)
	return lb.ID, p.ID
}

// poolMonitor reads a pool's tags and health monitor (nil for none).
func poolMonitor(t *testing.T, env simEnv, poolID string) (tags []string, mon *monitors.Monitor) {
	t.Helper()
	p, err := pools.Get(context.Background(), env.octavia, poolID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if p.MonitorID == "" {
		return p.Tags, nil
	}
	mon, err = monitors.Get(context.Background(), env.octavia, p.MonitorID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	return p.Tags, mon
}

// checkRestored fails unless the pool has outsideMonitor's settings back
// and, when untagged, exactly the tags its owner gave it.
func checkRestored(t *testing.T, env simEnv, poolID string, untagged bool) {
	t.Helper()
	tags, mon := poolMonitor(t, env, poolID)
	if mon == nil {
		t.Fatalf("pool %s has no health monitor: the one removed for the listener create never came back (tags %q)", poolID, tags)
	}
	want := outsideMonitor
	if mon.Name != want.Name || mon.Type != want.Type || mon.Delay != want.Delay || mon.Timeout != want.Timeout ||
		mon.MaxRetries != want.MaxRetries || mon.MaxRetriesDown != want.MaxRetriesDown {
		t.Errorf("monitor %s %s delay %d timeout %d retries %d/%d, want the original %s %s %d %d %d/%d", mon.Name, mon.Type, mon.Delay, mon.Timeout,
			mon.MaxRetries, mon.MaxRetriesDown, want.Name, want.Type, want.Delay, want.Timeout, want.MaxRetries, want.MaxRetriesDown)
	}
	if untagged && !slices.Equal(tags, []string{"team=db"}) {
		t.Errorf("pool tags %q, want only its owner's [team=db]", tags)
	}
}

// A Service joining a load balancer made outside Kubernetes removes its
// TCP monitor for its TCP listener. The process that removed it is gone
// (a restart, or another replica takes over) before bringing it back: a
// new Manager, which remembers nothing, brings it back with the settings
// it had, from the pool's tag.
func TestOVNRemovedMonitorComesBackAfterARestart(t *testing.T) {
	env := newSimEnv(t, 20*time.Millisecond)
	env.m.Requeue = 20 * time.Millisecond
	env.m.Config.LBProvider = loadbalancer.ProviderOVN
	lbID, poolID := outsideOVNLB(t, env)
	svc := simService("api", 8080, 30880, map[string]string{loadbalancer.AnnotationLoadBalancerID: lbID})
	ctx, nodes := context.Background(), simNodes("10.0.0.11", "10.0.0.12")

	syncUntilMonitorRemoved(t, env, svc, nodes)
	waitActive(t, env, lbID)
	if tags, mon := poolMonitor(t, env, poolID); mon != nil {
		t.Fatalf("pool %s still has monitor %s (tags %q)", poolID, mon.ID, tags)
	}

	restarted := &loadbalancer.Manager{Octavia: env.m.Octavia, Neutron: env.m.Neutron, Config: env.m.Config,
		ClusterUID: env.m.ClusterUID, Requeue: env.m.Requeue}
	syncUntilDone(t, restarted, svc, 0)
	waitActive(t, env, lbID)
	checkRestored(t, env, poolID, true)
	lpage, err := listeners.List(env.octavia, listeners.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := listeners.ExtractListeners(lpage)
	if !slices.ContainsFunc(ls, func(l listeners.Listener) bool { return l.ProtocolPort == 8080 && l.ProvisioningStatus == "ACTIVE" }) {
		t.Errorf("the Service's listener on 8080 is not there and ACTIVE: %+v", ls)
	}
}

// A listener create that keeps failing after the monitor in its way was
// removed must not leave the load balancer without that monitor: it is
// back within two syncs of every failure, with its settings, and once the
// create works it is back for good and Stackward's tag is gone.
func TestOVNRemovedMonitorComesBackWhileTheListenerCreateFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults []cloudsim.FaultRule
	}{
		{name: "the listener create fails every time",
			faults: []cloudsim.FaultRule{{Service: cloudsim.ServiceLoadBalancer, Operation: "listeners.create", Status: 500}}},
		{name: "the listener create fails every time and the first monitor re-create fails too",
			faults: []cloudsim.FaultRule{{Service: cloudsim.ServiceLoadBalancer, Operation: "listeners.create", Status: 500},
				{Service: cloudsim.ServiceLoadBalancer, Operation: "healthmonitors.create", Status: 500, Times: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newSimEnv(t, 20*time.Millisecond)
			env.m.Requeue = 20 * time.Millisecond
			env.m.Config.LBProvider = loadbalancer.ProviderOVN
			lbID, poolID := outsideOVNLB(t, env)
			for _, f := range tc.faults {
				if err := env.sim.SetFault(f); err != nil {
					t.Fatal(err)
				}
			}
			svc := simService("api", 8080, 30880, map[string]string{loadbalancer.AnnotationLoadBalancerID: lbID})
			ctx, nodes := context.Background(), simNodes("10.0.0.11", "10.0.0.12")

			failures, absent := 0, 0
			for range 16 {
				_, err := env.m.Ensure(ctx, "lab", svc, nodes)
				var re *api.RetryError
				switch {
				case err == nil:
					t.Fatal("Ensure succeeded although every listener create fails")
				case errors.As(err, &re):
				default:
					failures++
					if !strings.Contains(err.Error(), "create listener TCP/8080") {
						t.Errorf("the failure does not name the listener create: %v", err)
					}
				}
				waitActive(t, env, lbID)
				if _, mon := poolMonitor(t, env, poolID); mon != nil {
					absent = 0
				} else if failures > 0 {
					absent++
					if absent > 2 {
						t.Fatalf("after %d failed listener creates the monitor has been missing for %d syncs", failures, absent)
					}
				}
			}
			if failures < 3 {
				t.Fatalf("%d failed listener creates in 16 syncs, want at least 3", failures)
			}
			if absent > 0 {
				// The last sync removed it for the next attempt.
				if _, err := env.m.Ensure(ctx, "lab", svc, nodes); err == nil {
					t.Fatal("Ensure succeeded although every listener create fails")
				}
				waitActive(t, env, lbID)
			}
			checkRestored(t, env, poolID, false)

			env.sim.ClearFaults()
			syncUntilDone(t, env.m, svc, 0)
			waitActive(t, env, lbID)
			checkRestored(t, env, poolID, true)
		})
	}
}

// A Service deleted after it had the operator's monitor removed for its
// listener create, before that create happened, puts the monitor back as
// it leaves: the operator's pool is not left unmonitored.
func TestOVNRemovedMonitorComesBackWhenTheServiceLeavesFirst(t *testing.T) {
	env := newSimEnv(t, 20*time.Millisecond)
	env.m.Requeue = 20 * time.Millisecond
	env.m.Config.LBProvider = loadbalancer.ProviderOVN
	lbID, poolID := outsideOVNLB(t, env)
	svc := simService("api", 8080, 30880, map[string]string{loadbalancer.AnnotationLoadBalancerID: lbID})
	nodes := simNodes("10.0.0.11", "10.0.0.12")
	syncUntilMonitorRemoved(t, env, svc, nodes)
	waitActive(t, env, lbID)
	deleteUntilDone(t, env.m, svc)
	waitActive(t, env, lbID)
	checkRestored(t, env, poolID, true)
}

// syncUntilMonitorRemoved syncs svc until the sync that removed the
// monitor in its TCP listener's way (ReasonRecreatingMonitors), failing
// the test after 20 syncs.
func syncUntilMonitorRemoved(t *testing.T, env simEnv, svc *corev1.Service, nodes []*corev1.Node) {
	t.Helper()
	for range 20 {
		_, err := env.m.Ensure(context.Background(), "lab", svc, nodes)
		var re *api.RetryError
		if !errors.As(err, &re) {
			t.Fatalf("Ensure before the monitor went: %v", err)
		}
		if loadbalancer.ProgressReason(err.Error()) == loadbalancer.ReasonRecreatingMonitors {
			return
		}
		time.Sleep(re.RetryAfter())
	}
	t.Fatal("the monitor in the TCP listener's way was never removed")
}
