//go:build e2e && bench

package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/provider/app"
)

// versusNodes is how many (hollow) nodes back every load balancer.
const versusNodes = 3

// versusConf is what both CCMs read beyond the lab's cloud.conf: the
// amphora provider and health monitors on, as most production clusters run.
const versusConf = "[LoadBalancer]\nlb-provider = amphora\ncreate-monitor = true\n"

// TestBenchVersusUpstream runs the upstream openstack-cloud-controller-manager
// (v1.36.0, as e2e/upstreamccm builds it) and then Stackward, never both at
// once, on the same control plane, cloud and nodes, and times N Services of
// type LoadBalancer created at once: to the first ingress, to every
// ingress, and, deleted at once, until Octavia has none of their load
// balancers and the Services are gone; and counts the Octavia requests per
// Service. N is 1 and 8 on every cloud, and 32 on cloudsim.
// STACKWARD_BENCH_CLOUDS chooses the clouds (default "cloudsim,openstack").
func TestBenchVersusUpstream(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	for _, name := range benchClouds(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
			defer cancel()
			var cloud framework.TestCloud
			var octavia octaviaCounter
			sizes := []int{1, 8}
			switch name {
			case "cloudsim":
				c := framework.StartSimCloud(t, framework.SimCloudOptions{})
				cloud, octavia = c.TestCloud(), simOctavia{c}
				sizes = append(sizes, 32)
			case "openstack":
				rc := framework.StartRealCloud(t)
				cloud, octavia = rc, octaviaAPILog{path: rc.Dir + "/log/octavia-api.log"}
			}
			versusOnCloud(ctx, t, cp, cloud, octavia, sizes)
		})
	}
}

// benchClouds is STACKWARD_BENCH_CLOUDS, checked.
func benchClouds(t *testing.T) []string {
	v := os.Getenv("STACKWARD_BENCH_CLOUDS")
	if v == "" {
		return []string{"cloudsim", "openstack"}
	}
	var out []string
	for _, c := range strings.Split(v, ",") {
		c = strings.TrimSpace(c)
		if c != "cloudsim" && c != "openstack" {
			t.Fatalf("STACKWARD_BENCH_CLOUDS=%q: %q is neither cloudsim nor openstack", v, c)
		}
		out = append(out, c)
	}
	return out
}

// lbFigures are one batch's measurements.
type lbFigures struct {
	FirstIngress, AllIngress, AllDeleted float64 // seconds
	// FirstServing and AllServing are when the first and the last Service
	// had an ingress whose load balancer serves (lbWatcher.serving); -1 when none, or not all, did within servingGrace
	// of the last ingress. NotServing counts those that did not.
	FirstServing, AllServing float64
	NotServing               int
	// OctaviaCallsPerService is -1 when the cloud cannot count them.
	OctaviaCallsPerService float64
}

func (f lbFigures) report() map[string]float64 {
	out := map[string]float64{"first_ingress_seconds": f.FirstIngress, "all_ingress_seconds": f.AllIngress, "all_deleted_seconds": f.AllDeleted,
		"published_not_serving": float64(f.NotServing)}
	if f.FirstServing >= 0 {
		out["first_serving_seconds"] = f.FirstServing
	}
	if f.AllServing >= 0 {
		out["all_serving_seconds"] = f.AllServing
	}
	if f.OctaviaCallsPerService >= 0 {
		out["octavia_calls_per_service"] = f.OctaviaCallsPerService
	}
	return out
}

// versusCCMs are the two CCMs in the order they run.
var versusCCMs = []string{"upstream", "stackward"}

// lbCCMs are the CCMs the load balancer side-by-side runs on a cloud, in
// order:
//   - upstream: v1.36.0 as released (one service worker, a load balancer
//     created in one fully populated call);
//   - upstream-serial (the real cloud only): the same with
//     provider-requires-serial-api-calls = true, its children created one
//     call at a time, as an operator must run it where Octavia strands
//     fully populated creates (the lab's Zed does on an idle machine);
//   - stackward: as released (DefaultConcurrentServiceSyncs workers);
//   - stackward-1-worker: --concurrent-service-syncs=1, upstream's count.
func lbCCMs(cloud string) []string {
	if cloud == "openstack" {
		return []string{"upstream", "upstream-serial", "stackward", "stackward-1-worker"}
	}
	return []string{"upstream", "stackward", "stackward-1-worker"}
}

// servingGrace is how long after the last ingress a batch waits for every
// load balancer to serve before it counts those that do not.
const servingGrace = 45 * time.Second

func versusOnCloud(ctx context.Context, t *testing.T, cp *framework.ControlPlane, cloud framework.TestCloud, octavia octaviaCounter, sizes []int) {
	conf := cloud.CloudConf(t, versusConf)
	api := newLBWatcher(ctx, t, conf)
	prefix := cloud.Name() + "-vs-"
	for i := 1; i <= versusNodes; i++ {
		name := fmt.Sprintf("%s%d", prefix, i)
		cloud.CreateServer(t, name, 200+i, "m1.small", "az-1")
		t.Cleanup(func() { _ = cp.Admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		cp.StartNode(t, framework.NodeOptions{Name: name, IP: framework.NodeIP(200 + i)})
	}
	serialConf := cloud.CloudConf(t, versusConf+"provider-requires-serial-api-calls = true\n")
	ccms := lbCCMs(cloud.Name())
	figures := map[string]map[int]lbFigures{}
	for _, ccm := range ccms {
		stop := startVersusCCM(ctx, t, cp, ccm, conf, serialConf)
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			return countInitialized(ctx, cp.Admin, prefix) == versusNodes, nil
		}); err != nil {
			t.Fatalf("%s: %d of %d nodes initialized: %v", ccm, countInitialized(ctx, cp.Admin, prefix), versusNodes, err)
		}
		// One Service round trip, not measured, so that every CCM is
		// measured warm (controllers started, token and clients ready).
		lbBatch(ctx, t, cp, api, octavia, fmt.Sprintf("vs-%s-%s-warmup", cloud.Name(), ccm), 1)
		figures[ccm] = map[int]lbFigures{}
		for _, n := range sizes {
			f := lbBatch(ctx, t, cp, api, octavia, fmt.Sprintf("vs-%s-%s-%d", cloud.Name(), ccm, n), n)
			figures[ccm][n] = f
			t.Logf("%s %s N=%d: %+v", cloud.Name(), ccm, n, f)
		}
		stop()
	}
	out := map[string]any{"nodes": versusNodes, "provider": "amphora", "health_monitors": true, "upstream_version": "v1.36.0",
		"concurrent_service_syncs": map[string]int{"upstream": 1, "upstream-serial": 1, "stackward": app.DefaultConcurrentServiceSyncs, "stackward-1-worker": 1}}
	var table []string
	for _, n := range sizes {
		batch := map[string]any{}
		for _, ccm := range ccms {
			batch[ccm] = figures[ccm][n].report()
		}
		// Each Stackward over each upstream, figure by figure.
		for _, sw := range ccms {
			if !strings.HasPrefix(sw, "stackward") {
				continue
			}
			for _, up := range ccms {
				if !strings.HasPrefix(up, "upstream") {
					continue
				}
				ratios := map[string]float64{}
				for k, u := range figures[up][n].report() {
					if s, ok := figures[sw][n].report()[k]; ok && u > 0 && k != "published_not_serving" {
						ratios[k] = s / u
					}
				}
				batch[sw+"_over_"+up] = ratios
			}
		}
		out[fmt.Sprintf("%d_services", n)] = batch
		for _, ccm := range ccms {
			f := figures[ccm][n]
			calls, serving := "not counted", "never"
			if f.OctaviaCallsPerService >= 0 {
				calls = fmt.Sprintf("%.1f", f.OctaviaCallsPerService)
			}
			if f.AllServing >= 0 {
				serving = fmt.Sprintf("%.2f s", f.AllServing)
			}
			table = append(table, fmt.Sprintf("| %s | %s | %d | %.2f s | %.2f s | %s | %d | %.2f s | %s |",
				cloud.Name(), ccm, n, f.FirstIngress, f.AllIngress, serving, f.NotServing, f.AllDeleted, calls))
		}
	}
	put(t, "lb_versus_upstream_"+cloud.Name(), out)
	t.Logf("\n| cloud | CCM | N | first ingress | all ingress | all serving | published, not serving | all deleted | Octavia calls/Service |\n|---|---|---|---|---|---|---|---|---|\n%s", strings.Join(table, "\n"))
}

// startVersusCCM starts one of lbCCMs with the same cluster name and
// cloud.conf (serialConf for upstream-serial); stop ends it and returns
// when it has.
func startVersusCCM(ctx context.Context, t *testing.T, cp *framework.ControlPlane, ccm, conf, serialConf string) (stop func()) {
	switch ccm {
	case "upstream", "upstream-serial":
		if ccm == "upstream-serial" {
			conf = serialConf
		}
		p := cp.StartUpstreamCCM(ctx, t, framework.UpstreamReleaseRBAC, conf, "--cluster-name=lab", "--leader-elect=false", "--secure-port=0",
			"--use-service-account-credentials=false", "--node-monitor-period=2s")
		return p.Stop
	case "stackward", "stackward-1-worker":
		var extra []string
		if ccm == "stackward-1-worker" {
			extra = append(extra, "--concurrent-service-syncs=1")
		}
		stop, err := cp.RunCCM(ctx, conf, extra...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		return stop
	}
	t.Fatalf("unknown CCM %q", ccm)
	return nil
}

// lbBatch creates n Services of type LoadBalancer in namespace ns at once,
// waits for every ingress, deletes them at once and waits until Octavia
// has no load balancer left and the Services are gone. The project must
// have no load balancer when it starts (the previous batch left none).
func lbBatch(ctx context.Context, t *testing.T, cp *framework.ControlPlane, api *lbWatcher, octavia octaviaCounter, ns string, n int) lbFigures {
	t.Helper()
	if left := api.live(ctx, t); left != 0 {
		t.Fatalf("%s: %d load balancers are left from before", ns, left)
	}
	cp.CreateNamespace(ctx, t, ns)
	callsBefore, ownBefore := octavia.count(t), api.requests.Load()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("lb-%02d", i+1)
	}
	start := time.Now()
	parallel(t, n, n, func(i int) error {
		_, err := cp.Admin.CoreV1().Services(ns).Create(ctx, framework.LBService(ns, names[i-1]), metav1.CreateOptions{})
		return err
	})
	f := lbFigures{FirstServing: -1, AllServing: -1}
	seen, serving := map[string]bool{}, map[string]bool{}
	var lastIngress, lastCloudLook time.Time
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 15*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Admin.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, s := range list.Items {
			if len(s.Status.LoadBalancer.Ingress) > 0 && !seen[s.Name] {
				seen[s.Name] = true
				if len(seen) == 1 {
					f.FirstIngress = time.Since(start).Seconds()
				}
				if len(seen) == n {
					f.AllIngress = time.Since(start).Seconds()
					lastIngress = time.Now()
				}
			}
		}
		// Octavia is read at most four times a second, so that the
		// bench's own calls do not slow the CCM's down.
		if len(seen) > len(serving) && time.Since(lastCloudLook) >= 250*time.Millisecond {
			lastCloudLook = time.Now()
			for name := range api.serving(ctx, t, ns) {
				if seen[name] && !serving[name] {
					serving[name] = true
					if len(serving) == 1 {
						f.FirstServing = time.Since(start).Seconds()
					}
				}
			}
		}
		if len(serving) == n {
			f.AllServing = time.Since(start).Seconds()
			return true, nil
		}
		return len(seen) == n && time.Since(lastIngress) > servingGrace, nil
	})
	if err != nil {
		t.Fatalf("%s: %d of %d Services got an ingress, %d serve: %v; events: %s", ns, len(seen), n, len(serving), err, serviceEvents(ctx, cp, ns))
	}
	f.NotServing = n - len(serving)

	start = time.Now()
	parallel(t, n, n, func(i int) error {
		return cp.Admin.CoreV1().Services(ns).Delete(ctx, names[i-1], metav1.DeleteOptions{})
	})
	servicesGone := false
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 15*time.Minute, true, func(ctx context.Context) (bool, error) {
		if !servicesGone {
			list, err := cp.Admin.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
			servicesGone = err == nil && len(list.Items) == 0
		}
		return servicesGone && api.live(ctx, t) == 0, nil
	})
	if err != nil {
		t.Fatalf("%s: Services gone %t, load balancers left %d: %v; events: %s", ns, servicesGone, api.live(ctx, t), err, serviceEvents(ctx, cp, ns))
	}
	f.AllDeleted = time.Since(start).Seconds()
	f.OctaviaCallsPerService = -1
	if total := octavia.count(t); total >= 0 {
		own := int(api.requests.Load() - ownBefore)
		ccm := total - callsBefore - own
		if ccm < 0 {
			// Fewer than the bench's own: the log is not what it reads.
			t.Logf("%s: Octavia counted %d requests in the batch, fewer than the bench's own %d: calls not counted", ns, total-callsBefore, own)
		} else {
			f.OctaviaCallsPerService = PerUnit(ccm, n)
		}
	}
	if err := cp.Admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return f
}

// live is how many load balancers the project has that are not DELETED.
func (w *lbWatcher) live(ctx context.Context, t *testing.T) int {
	t.Helper()
	return len(slices.DeleteFunc(w.loadBalancers(ctx, t), func(lb loadbalancers.LoadBalancer) bool { return lb.ProvisioningStatus == "DELETED" }))
}

// loadBalancers lists the project's load balancers.
func (w *lbWatcher) loadBalancers(ctx context.Context, t *testing.T) []loadbalancers.LoadBalancer {
	t.Helper()
	pages, err := loadbalancers.List(w.api.Octavia, loadbalancers.ListOpts{}).AllPages(ctx)
	if err != nil {
		t.Fatalf("list load balancers: %v", err)
	}
	all, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		t.Fatalf("list load balancers: %v", err)
	}
	return all
}

// serving names the Services of namespace ns whose load balancer (named
// kube_service_lab_<ns>_<name> by both CCMs) Octavia shows provisioned
// with at least one listener and every listener provisioned: a load
// balancer that serves, not one whose create Octavia stranded.
func (w *lbWatcher) serving(ctx context.Context, t *testing.T, ns string) map[string]bool {
	t.Helper()
	lbs := w.loadBalancers(ctx, t)
	lPages, err := listeners.List(w.api.Octavia, listeners.ListOpts{}).AllPages(ctx)
	if err != nil {
		t.Fatalf("list listeners: %v", err)
	}
	ls, err := listeners.ExtractListeners(lPages)
	if err != nil {
		t.Fatalf("list listeners: %v", err)
	}
	made, unmade := map[string]int{}, map[string]bool{}
	for _, l := range ls {
		for _, lb := range l.Loadbalancers {
			if provisioned(l.ProvisioningStatus) {
				made[lb.ID]++
			} else {
				unmade[lb.ID] = true
			}
		}
	}
	prefix := "kube_service_lab_" + ns + "_"
	out := map[string]bool{}
	for _, lb := range lbs {
		if name, ok := strings.CutPrefix(lb.Name, prefix); ok && provisioned(lb.ProvisioningStatus) && made[lb.ID] > 0 && !unmade[lb.ID] {
			out[name] = true
		}
	}
	return out
}

// provisioned: Octavia has made the object; ACTIVE, or PENDING_UPDATE
// while a later change (a monitor, a member) is applied beside traffic.
func provisioned(status string) bool {
	return status == "ACTIVE" || status == "PENDING_UPDATE"
}
