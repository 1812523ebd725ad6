//go:build e2e

package chart

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/stackward/stackward/e2e/framework"
)

// runRelease is the release whose pod this test runs; apart from
// sdkRelease so the two tests can share the control plane.
const runRelease = "stackward-run"

// TestChartPodRunsAsInstalled runs the pod that `helm install` created as a
// kubelet would, but out of cluster: the real stackward-ccm and
// stackward-approver binaries with exactly the Deployment's container args,
// the chart's Secret as the files of its volume, and a TokenRequest token of
// the chart's ServiceAccount. A hollow kubelet joins: the CCM must
// initialize its Node and the approver must approve its serving
// certificate, both under the chart's RBAC and leader election.
func TestChartPodRunsAsInstalled(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bins := buildBinaries(t)
	start := time.Now()

	// The operator's cloud.conf, given to the chart as text.
	conf, err := os.ReadFile(cloud.CloudConf(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	cfg := helmConfig(t, cp)
	chrt, err := loader.Load(chartDir())
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.Timeout = runRelease, ns, 2*time.Minute
	if _, err := install.RunWithContext(ctx, chrt, map[string]any{
		"cloudConfig": map[string]any{"contents": string(conf)},
		"clusterName": "lab",
		"ccm":         map[string]any{"extraArgs": map[string]any{"node-monitor-period": "2s", "v": 2}},
	}); err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Cleanup(func() {
		if _, err := action.NewUninstall(cfg).Run(runRelease); err != nil {
			t.Errorf("helm uninstall: %v", err)
		}
	})

	d, err := cp.Admin.AppsV1().DaemonSets(ns).Get(ctx, runRelease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := cp.StartPod(ctx, t, ns, d.Spec.Template.Spec, bins)

	t.Run("both containers lead their Lease and answer their probes", func(t *testing.T) {
		pod.WaitReady(ctx, t, cp, ns, "cloud-controller-manager", "stackward-approver")
	})
	if t.Failed() {
		return
	}
	t.Run("a joining node is initialized and gets its serving certificate", func(t *testing.T) {
		cp.CheckNodeJoins(ctx, t, cloud, "chart-node-1", 1)
	})
	t.Run("the approver's metrics are authenticated and follow pending requests", func(t *testing.T) {
		checkApproverMetrics(ctx, t, cp, cloud, runRelease)
	})
	t.Logf("install to approved serving certificate: %v", time.Since(start).Round(time.Millisecond))
}

// buildBinaries builds stackward-ccm and stackward-approver, by container
// name. The Go build cache makes this quick after the first time.
func buildBinaries(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/stackward-ccm", "./cmd/stackward-approver")
	cmd.Dir = framework.RepoRoot()
	// The lab's network namespace has no route out: build from the
	// module cache only.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return map[string]string{
		"ccm":      filepath.Join(dir, "stackward-ccm"),
		"approver": filepath.Join(dir, "stackward-approver"),
	}
}
