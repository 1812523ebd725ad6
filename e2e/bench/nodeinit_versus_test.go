//go:build e2e && bench

package bench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/stackward/stackward/e2e/framework"
)

// TestBenchNodeInitVersusUpstream times the upstream CCM and Stackward
// initializing the same 100 registered nodes at 20 ms cloud latency, with 1
// and 10 node-sync workers. Both start the same way, so the window holds
// the same work: each runs as its own process (the built stackward-ccm, the
// upstream binary) with a kubeconfig whose ServiceAccount, RBAC and token
// were made before the timer started, the same flags otherwise at their
// defaults, the apiserver QPS at k8s.io/cloud-provider's default (20) and
// at the chart's (100), and the timer starts when the process is started. The report has the time to every node initialized from the
// process start and from the first node initialized, the cloud calls, and
// upstream/stackward (above 1: Stackward is faster); each is the median of
// STACKWARD_BENCH_ROUNDS rounds (default 3) that alternate who goes first.
// STACKWARD_BENCH_LOG_DIR keeps the CCMs' logs there, to read where the
// time goes.
func TestBenchNodeInitVersusUpstream(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	bin := stackwardBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	const n = 100
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{Latency: cloudLatency})
	prefix := "vsinit-"
	for i := 1; i <= n; i++ {
		cloud.CreateServer(t, fmt.Sprintf("%s%04d", prefix, i), i, "m1.small", "az-1")
	}
	conf := cloud.CloudConf(t, "")
	stackwardKubeconfig, err := cp.CCMKubeconfig(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	binaries := map[string][]string{
		"upstream":  {filepath.Join(framework.UpstreamCCMDir(t), "openstack-cloud-controller-manager"), "--kubeconfig=" + cp.UpstreamCCMKubeconfig(ctx, t, framework.UpstreamReleaseRBAC), "--cloud-provider=openstack"},
		"stackward": {filepath.Join(bin, "stackward-ccm"), "--kubeconfig=" + stackwardKubeconfig},
	}
	rounds := benchRounds(t)
	logDir := os.Getenv("STACKWARD_BENCH_LOG_DIR")
	out := map[string]any{"nodes": n, "cloud_latency_ms": cloudLatency.Milliseconds(), "rounds": rounds}
	var table []string
	// 20 apiserver QPS is k8s.io/cloud-provider's default (both CCMs'
	// without flags, burst 30); 100 (burst 200) is the chart's, given to both.
	for _, tc := range []nodeInitCase{{1, 20, 30}, {10, 20, 30}, {1, 100, 200}, {10, 100, 200}} {
		samples := map[string][]nodeInitFigures{}
		for round := range rounds {
			// Each round swaps who goes first, so a drift in the machine's
			// load favours neither.
			order := slices.Clone(versusCCMs)
			if round%2 == 1 {
				slices.Reverse(order)
			}
			for _, ccm := range order {
				dir := t.TempDir()
				if logDir != "" {
					dir = logDir
				}
				name := fmt.Sprintf("%s-%dworkers-%dqps-round%d", ccm, tc.workers, tc.qps, round+1)
				args := append(slices.Clone(binaries[ccm][1:]), "--cloud-config="+conf)
				samples[ccm] = append(samples[ccm], initNodesOnce(ctx, t, cp, cloud, prefix, n, tc, dir, name, binaries[ccm][0], args))
			}
		}
		up, sw := medianFigures(samples["upstream"]), medianFigures(samples["stackward"])
		for _, ccm := range versusCCMs {
			f := map[string]nodeInitFigures{"upstream": up, "stackward": sw}[ccm]
			table = append(table, fmt.Sprintf("| %s | %d | %d | %.2f s | %.2f s | %.2f s | %d |", ccm, tc.workers, tc.qps, f.ToFirst, f.FirstToAll, f.ToAll, f.CloudCalls))
		}
		out[fmt.Sprintf("%d_workers_%d_qps", tc.workers, tc.qps)] = map[string]any{
			"upstream": up, "stackward": sw,
			"upstream_over_stackward": map[string]float64{
				"seconds_to_all": ratio(up.ToAll, sw.ToAll), "seconds_first_to_all": ratio(up.FirstToAll, sw.FirstToAll),
			},
			"samples_seconds_to_all": map[string][]float64{"upstream": secondsToAll(samples["upstream"]), "stackward": secondsToAll(samples["stackward"])},
		}
	}
	put(t, "node_init_versus_upstream_100_nodes", out)
	t.Logf("\nmedians of %d rounds\n| CCM | workers | apiserver QPS | start to first | first to all | start to all | cloud calls |\n|---|---|---|---|---|---|---|\n%s", rounds, strings.Join(table, "\n"))
}

// nodeInitCase is one setting both CCMs run with.
type nodeInitCase struct{ workers, qps, burst int }

// initNodesOnce registers the n nodes, runs bin with args and the case's
// flags until every node is initialized, stops it and deletes the nodes.
func initNodesOnce(ctx context.Context, t *testing.T, cp *framework.ControlPlane, cloud *framework.SimCloud, prefix string, n int,
	tc nodeInitCase, dir, name, bin string, args []string) nodeInitFigures {
	t.Helper()
	registerNodes(ctx, t, cp.Admin, prefix, n)
	track := trackInitialized(ctx, t, cp, prefix)
	defer track.close()
	cloud.Sim.ResetCalls()
	args = append(args, "--cluster-name=lab", "--leader-elect=false", "--secure-port=0", "--v=2",
		fmt.Sprintf("--concurrent-node-syncs=%d", tc.workers), fmt.Sprintf("--kube-api-qps=%d", tc.qps), fmt.Sprintf("--kube-api-burst=%d", tc.burst))
	start := time.Now()
	p := framework.StartProcessForTest(t, dir, name, bin, args...)
	first, last, err := track.wait(ctx, n, 10*time.Minute)
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, p.Tail(4000))
	}
	p.Stop()
	calls := cloud.Sim.Calls()
	deleteNodes(ctx, t, cp, prefix, n)
	return nodeInitFigures{
		ToAll: last.Sub(start).Seconds(), ToFirst: first.Sub(start).Seconds(), FirstToAll: last.Sub(first).Seconds(),
		CloudCalls: SumCalls(calls, "compute.", "network."), Calls: calls,
	}
}

// benchRounds is STACKWARD_BENCH_ROUNDS (default 3): how often a timing
// that a loaded machine makes noisy is repeated; the report has the median.
func benchRounds(t *testing.T) int {
	v := os.Getenv("STACKWARD_BENCH_ROUNDS")
	if v == "" {
		return 3
	}
	r, err := strconv.Atoi(v)
	if err != nil || r < 1 {
		t.Fatalf("STACKWARD_BENCH_ROUNDS=%q: want a positive number", v)
	}
	return r
}

// medianFigures takes each timing's median over the rounds (the calls of
// the round whose time to all is the median).
func medianFigures(fs []nodeInitFigures) nodeInitFigures {
	med := func(get func(nodeInitFigures) float64) float64 {
		v := make([]float64, len(fs))
		for i, f := range fs {
			v[i] = get(f)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	byTime := slices.Clone(fs)
	slices.SortFunc(byTime, func(a, b nodeInitFigures) int { return cmp.Compare(a.ToAll, b.ToAll) })
	out := byTime[len(byTime)/2]
	out.ToFirst = med(func(f nodeInitFigures) float64 { return f.ToFirst })
	out.FirstToAll = med(func(f nodeInitFigures) float64 { return f.FirstToAll })
	return out
}

func secondsToAll(fs []nodeInitFigures) []float64 {
	out := make([]float64, len(fs))
	for i, f := range fs {
		out[i] = f.ToAll
	}
	return out
}

// nodeInitFigures are one CCM's initialization of the nodes.
type nodeInitFigures struct {
	ToAll      float64        `json:"seconds_to_all"`
	ToFirst    float64        `json:"seconds_to_first"`
	FirstToAll float64        `json:"seconds_first_to_all"`
	CloudCalls int            `json:"cloud_calls"`
	Calls      map[string]int `json:"calls_by_operation"`
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// initTracker notes when each Node of a prefix is first seen initialized
// (providerID set, uninitialized taint gone), from a watch.
type initTracker struct {
	mu    sync.Mutex
	at    map[string]time.Time
	stop  chan struct{}
	close func()
}

func trackInitialized(ctx context.Context, t *testing.T, cp *framework.ControlPlane, prefix string) *initTracker {
	t.Helper()
	tr := &initTracker{at: map[string]time.Time{}, stop: make(chan struct{})}
	factory := informers.NewSharedInformerFactory(cp.Admin, 0)
	inf := factory.Core().V1().Nodes().Informer()
	note := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok || !strings.HasPrefix(n.Name, prefix) || n.Spec.ProviderID == "" || framework.HasTaint(n, "node.cloudprovider.kubernetes.io/uninitialized") {
			return
		}
		now := time.Now()
		tr.mu.Lock()
		if _, seen := tr.at[n.Name]; !seen {
			tr.at[n.Name] = now
		}
		tr.mu.Unlock()
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: note, UpdateFunc: func(_, obj any) { note(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(tr.stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("node informer did not sync")
	}
	tr.close = func() { close(tr.stop); factory.Shutdown() }
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.at) != 0 {
		tr.close()
		t.Fatalf("%d nodes of %s are initialized before the CCM started", len(tr.at), prefix)
	}
	return tr
}

// wait returns when n nodes are initialized: the first and the last time.
func (tr *initTracker) wait(ctx context.Context, n int, timeout time.Duration) (first, last time.Time, err error) {
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.at) >= n, nil
	})
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if err != nil {
		return first, last, fmt.Errorf("%d of %d nodes initialized: %w", len(tr.at), n, err)
	}
	for _, at := range tr.at {
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	return first, last, nil
}

// deleteNodes deletes the registered nodes and waits until they are gone.
func deleteNodes(ctx context.Context, t *testing.T, cp *framework.ControlPlane, prefix string, n int) {
	t.Helper()
	parallel(t, n, 20, func(i int) error {
		err := cp.Admin.CoreV1().Nodes().Delete(ctx, fmt.Sprintf("%s%04d", prefix, i), metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, node := range list.Items {
			if strings.HasPrefix(node.Name, prefix) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("nodes %s* not deleted: %v", prefix, err)
	}
}

// stackwardBinaries is the directory of the built stackward-ccm and
// stackward-approver: STACKWARD_BIN_DIR (`make bench` builds them first),
// else built here.
func stackwardBinaries(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("STACKWARD_BIN_DIR"); bin != "" {
		return bin
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin, "./cmd/stackward-ccm", "./cmd/stackward-approver")
	build.Dir = framework.RepoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}
