//go:build e2e && bench

package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

// TestBenchProcessRSS runs the built stackward-ccm and stackward-approver
// binaries as separate processes, with the chart's defaults, against 1,000
// and 5,000 registered nodes, and reports each one's peak RSS once the CCM
// has initialized every node (goal: the CCM within 150 MiB at 5,000).
func TestBenchProcessRSS(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	bin := stackwardBinaries(t)
	sa, err := cp.ApplyChartRBAC()
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]any{}
	for _, n := range []int{1000, 5000} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
			defer cancel()
			cloud := framework.StartSimCloud(t, framework.SimCloudOptions{Latency: cloudLatency})
			prefix := fmt.Sprintf("rss%d-", n)
			for i := 1; i <= n; i++ {
				cloud.CreateServer(t, fmt.Sprintf("%s%04d", prefix, i), i, "m1.small", "az-1")
			}
			registerNodes(ctx, t, cp.Admin, prefix, n)
			cfg, err := cp.ServiceAccountConfig(ctx, framework.ChartNamespace, sa)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			kubeconfig := filepath.Join(dir, "kubeconfig")
			if err := cp.WriteKubeconfig(kubeconfig, cfg); err != nil {
				t.Fatal(err)
			}
			conf := cloud.CloudConf(t, "")
			// The chart's CCM defaults: 10 node-sync workers, 100 apiserver QPS.
			ccmArgs := append([]string{"--kubeconfig=" + kubeconfig, "--cloud-config=" + conf,
				"--concurrent-node-syncs=10", "--kube-api-qps=100", "--kube-api-burst=200"}, framework.CCMArgs...)
			ccm := framework.StartProcessForTest(t, dir, "stackward-ccm", filepath.Join(bin, "stackward-ccm"), ccmArgs...)
			appr := framework.StartProcessForTest(t, dir, "stackward-approver", filepath.Join(bin, "stackward-approver"),
				"--kubeconfig="+kubeconfig, "--cloud-config="+conf, "--secure-port=0",
				"--leader-elect-resource-namespace="+framework.ChartNamespace)
			start := time.Now()
			err = wait.PollUntilContextTimeout(ctx, time.Second, 15*time.Minute, true, func(ctx context.Context) (bool, error) {
				return countInitialized(ctx, cp.Admin, prefix) == n, nil
			})
			if err != nil {
				t.Fatalf("%d of %d nodes initialized: %v\n%s", countInitialized(ctx, cp.Admin, prefix), n, err, ccm.Tail(20))
			}
			elapsed := time.Since(start)
			results[fmt.Sprintf("%d_nodes", n)] = map[string]any{
				"nodes":                      n,
				"seconds_to_all_initialized": elapsed.Seconds(),
				"ccm_peak_rss_mib":           peakRSSMiB(t, ccm),
				"approver_peak_rss_mib":      peakRSSMiB(t, appr),
			}
			ccm.Stop()
			appr.Stop()
			// Only the next size's processes would see leftovers (and so
			// show more memory); deleting 5,000 Nodes at once may time out.
			if err := cp.Admin.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
				t.Logf("deleting the Nodes: %v", err)
			}
		})
	}
	results["ccm_goal_mib_at_5000"] = 150
	put(t, "process_peak_rss", results)
}

// peakRSSMiB reads VmHWM, the process's peak resident set, from /proc.
func peakRSSMiB(t *testing.T, p *framework.Process) float64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.PID()))
	if err != nil {
		t.Fatalf("%s: %v", p.Name, err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("%s: VmHWM %q: %v", p.Name, v, err)
			}
			return float64(kb) / 1024
		}
	}
	t.Fatalf("%s: no VmHWM in /proc/%d/status", p.Name, p.PID())
	return 0
}
