//go:build e2e

package loadbalancers

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/doctor"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// stuckAfter is the CCM's --lb-stuck-after here (15m by default).
const stuckAfter = 20 * time.Second

// TestAStuckLoadBalancerOnRealOctavia: octavia-worker is SIGKILLed in the
// middle of a Service's load balancer create, as a worker that dies on a
// real cloud. Real Octavia (Zed, jobboard off) then leaves the load
// balancer PENDING_CREATE for good, the restarted worker included. The CCM
// must keep that honest and cheap: one Warning Event naming the load
// balancer, stackward_loadbalancers_stuck at 1, a list call at most every
// 30 s and no writes, `stackward doctor` listing it; and once an admin
// marks it ERROR in Octavia's database, a new ACTIVE load balancer with
// the same floating IP, without a CCM restart, and the gauge back at 0.
func TestAStuckLoadBalancerOnRealOctavia(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	rc := framework.SharedRealCloud(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	if _, err := rc.WaitHealthy(ctx, time.Time{}, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	api := framework.NewCloudAPI(ctx, t, rc.CloudConf(t, ""))
	public := api.NetworkID(ctx, t, framework.FloatingNetwork)
	node := "openstack-stuck-0"
	cp.JoinCloudNode(t, rc, node, 101+180) // apart from the other scenarios' nodes
	conf := rc.CloudConf(t, fmt.Sprintf("\n[LoadBalancer]\nlb-provider = amphora\nfloating-network-id = %s\n", public))
	reg := prometheus.NewRegistry()
	// Not ctx: it ends when this function returns, before the cleanups
	// below, which need the CCM to delete the Service's load balancer.
	stop, err := cp.RunCCMWithRegistry(context.Background(), conf, reg, "--lb-stuck-after="+stuckAfter.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ns := "stuck"
	cp.CreateNamespace(ctx, t, ns)
	// Registered after the CCM, so it runs while the CCM still deletes.
	t.Cleanup(func() { cp.DeleteServices(t, ns) })
	cp.WaitInitialized(ctx, t, node)
	lbName := loadbalancer.LoadBalancerName("lab", loadbalancer.ServiceRef{Namespace: ns, Name: "web"})

	// The worker takes the create off the queue, then waits to insert the
	// load balancer's amphora: SIGKILL it there.
	release := rc.BlockInserts(ctx, t, "octavia.amphora")
	if _, err := cp.Admin.CoreV1().Services(ns).Create(ctx, framework.LBService(ns, "web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := rc.SessionsWaitingForLocks(ctx, "octavia-worker")
		return n > 0, err
	}); err != nil {
		t.Fatalf("octavia-worker never reached the amphora insert of %s: %v (%s)", lbName, err, rc.LogsHint())
	}
	worker := rc.InjectFault(t, framework.Fault{Kind: framework.FaultKill, Service: "octavia-worker", For: 15 * time.Second})
	release()
	lbID := strings.TrimSpace(sqlOrFatal(ctx, t, rc, fmt.Sprintf("SELECT id FROM octavia.load_balancer WHERE name = '%s' AND provisioning_status = 'PENDING_CREATE'", lbName)))
	if lbID == "" || strings.Contains(lbID, "\n") {
		t.Fatalf("load balancers %s in PENDING_CREATE: %q", lbName, lbID)
	}
	<-worker.Done()
	if _, err := rc.WaitHealthy(ctx, worker.Ended(), 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	killedAt := worker.Started

	t.Run("one Warning Event names the stuck load balancer and the admin action", func(t *testing.T) {
		ev := waitStuckEvent(ctx, t, cp, ns, "web", 3*time.Minute)
		for _, want := range []string{lbID, "PENDING_CREATE", "ERROR"} {
			if !strings.Contains(ev.Message, want) {
				t.Errorf("Event %q does not say %q", ev.Message, want)
			}
		}
		t.Logf("Event after %s: %s", ev.FirstTimestamp.Sub(killedAt).Round(time.Second), ev.Message)
	})
	t.Run("the gauge counts it", func(t *testing.T) {
		waitGauge(ctx, t, reg, 1, time.Minute)
	})

	// The stuck period: nobody but the CCM talks to Octavia's API now.
	mark, err := rc.MarkOctaviaLog()
	if err != nil {
		t.Fatal(err)
	}
	const window = 75 * time.Second
	select {
	case <-time.After(window):
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	requests, err := rc.OctaviaRequestsSince(mark)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("while stuck the CCM lists at most every 30 s and changes nothing", func(t *testing.T) {
		var writes []string
		for _, r := range requests {
			if !strings.HasPrefix(r, "GET ") {
				writes = append(writes, r)
			}
		}
		// One list per 30 s recheck, plus one for a recheck that falls at
		// either end of the window.
		if limit := int(window/(30*time.Second)) + 2; len(requests) > limit || len(writes) > 0 {
			t.Errorf("%d Octavia requests in %s (limit %d), writes %v: %v", len(requests), window, limit, writes, requests)
		}
		t.Logf("Octavia requests in %s of stuck load balancer: %d %v", window, len(requests), requests)
	})
	if st := strings.TrimSpace(sqlOrFatal(ctx, t, rc, fmt.Sprintf("SELECT provisioning_status FROM octavia.load_balancer WHERE id = '%s'", lbID))); st != "PENDING_CREATE" {
		t.Fatalf("after the worker's restart Octavia has load balancer %s %s: not stuck, nothing to test", lbID, st)
	}
	t.Logf("real Octavia: %s is still PENDING_CREATE %s after the worker was killed, %s after it was restarted",
		lbID, time.Since(killedAt).Round(time.Second), time.Since(worker.Ended()).Round(time.Second))
	t.Run("the Service's events still hold one Warning for it", func(t *testing.T) {
		ev := waitStuckEvent(ctx, t, cp, ns, "web", time.Second)
		t.Logf("count %d", ev.Count)
	})

	t.Run("stackward doctor lists it", func(t *testing.T) {
		var out bytes.Buffer
		report, err := doctor.Run(ctx, doctor.Config{Kubeconfig: filepath.Join(framework.KubernetesDir, "super-admin.conf"),
			CloudConfig: conf, Output: doctor.OutputJSON, Timeout: time.Minute, Out: &out, StuckAfter: stuckAfter})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(report.StuckLoadBalancers, func(s doctor.StuckLoadBalancer) bool {
			return s.ID == lbID && s.Status == "PENDING_CREATE" && s.Service == ns+"/web"
		}) {
			t.Errorf("doctor lists %+v, want %s (PENDING_CREATE, %s/web)", report.StuckLoadBalancers, lbID, ns)
		}
	})

	stuck, err := loadbalancers.Get(ctx, api.Octavia, lbID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	fips, err := api.FloatingIPs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(fips, func(f floatingips.FloatingIP) bool { return f.PortID == stuck.VipPortID })
	if i < 0 {
		t.Fatalf("no floating IP on the stuck load balancer's VIP port %s: %+v", stuck.VipPortID, fips)
	}
	fip := fips[i].FloatingIP

	// The admin's way out: provisioning_status = ERROR in Octavia's DB.
	if err := rc.MarkLoadBalancerError(ctx, lbID); err != nil {
		t.Fatal(err)
	}
	marked := time.Now()
	t.Run("once marked ERROR the Service gets a new ACTIVE load balancer with the same floating IP", func(t *testing.T) {
		svc := cp.WaitIngress(ctx, t, ns, "web", 5*time.Minute)
		if got := svc.Status.LoadBalancer.Ingress[0].IP; got != fip {
			t.Errorf("ingress %s, want the floating IP %s kept", got, fip)
		}
		st := api.WaitState(ctx, t, 5*time.Minute, lbName+" ACTIVE", func(st *framework.OctaviaState) bool {
			return st.LBs[lbName].Status == "ACTIVE"
		})
		if id := st.LBs[lbName].ID; id == lbID {
			t.Errorf("load balancer %s is the stuck one", id)
		}
		t.Logf("replaced %s after %s", lbID, time.Since(marked).Round(time.Second))
		waitGauge(ctx, t, reg, 0, 2*time.Minute)
	})
}

// waitStuckEvent waits for the Service's LoadBalancerStuck Events and
// requires exactly one Event object (its repeats fold into its count).
func waitStuckEvent(ctx context.Context, t *testing.T, cp *framework.ControlPlane, ns, name string, timeout time.Duration) corev1.Event {
	t.Helper()
	var stuck []corev1.Event
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, nil
		}
		stuck = slices.DeleteFunc(list.Items, func(e corev1.Event) bool { return e.Reason != loadbalancer.ReasonLoadBalancerStuck })
		return len(stuck) > 0, nil
	})
	if err != nil {
		t.Fatalf("no %s Event on %s/%s: %s", loadbalancer.ReasonLoadBalancerStuck, ns, name, cp.EventsOf(ctx, ns, name))
	}
	if len(stuck) != 1 || stuck[0].Type != corev1.EventTypeWarning {
		t.Fatalf("%d %s Events, want one Warning: %+v", len(stuck), loadbalancer.ReasonLoadBalancerStuck, stuck)
	}
	return stuck[0]
}

// waitGauge waits until stackward_loadbalancers_stuck is want.
func waitGauge(ctx context.Context, t *testing.T, reg *prometheus.Registry, want float64, timeout time.Duration) {
	t.Helper()
	got := -1.0
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(context.Context) (bool, error) {
		got = gaugeValue(t, reg, "stackward_loadbalancers_stuck")
		return got == want, nil
	})
	if err != nil {
		t.Errorf("stackward_loadbalancers_stuck = %v, want %v", got, want)
	}
}

// gaugeValue is the sum of a gauge's series on reg, -1 when it has none.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		sum := 0.0
		for _, m := range f.GetMetric() {
			sum += m.GetGauge().GetValue()
		}
		return sum
	}
	return -1
}

func sqlOrFatal(ctx context.Context, t *testing.T, rc *framework.RealCloud, q string) string {
	t.Helper()
	out, err := rc.SQL(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
