package framework

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stackward/stackward/pkg/approver"
	"github.com/stackward/stackward/pkg/provider/app"
)

// CCMArgs are the lab's stackward-ccm flags beyond kubeconfig and cloud
// config: short periods so lifecycle tests are quick. Leader election is
// off in-process because k8s.io/cloud-provider exits the process when the
// lease is lost (the chart runs with it on).
var CCMArgs = []string{
	"--cluster-name=lab",
	"--leader-elect=false",
	"--secure-port=0",
	"--node-monitor-period=2s",
	"--node-status-update-frequency=3s",
}

// RunCCM runs stackward-ccm in-process as the chart's ServiceAccount (its
// RBAC applied first) until stop is called or ctx is done. extra flags
// follow CCMArgs.
func (cp *ControlPlane) RunCCM(ctx context.Context, cloudConf string, extra ...string) (stop func(), err error) {
	return cp.RunCCMWithRegistry(ctx, cloudConf, prometheus.NewRegistry(), extra...)
}

// RunCCMWithRegistry is RunCCM with the CCM's metrics (its cloud calls
// among them) on reg, for a test that counts them.
func (cp *ControlPlane) RunCCMWithRegistry(ctx context.Context, cloudConf string, reg *prometheus.Registry, extra ...string) (stop func(), err error) {
	dir, err := os.MkdirTemp("", "stackward-ccm-")
	if err != nil {
		return nil, err
	}
	kubeconfig, err := cp.CCMKubeconfig(ctx, dir)
	if err != nil {
		return nil, err
	}
	args := append([]string{"--kubeconfig=" + kubeconfig, "--cloud-config=" + cloudConf}, CCMArgs...)
	args = append(args, extra...)
	return runInProcess("stackward-ccm", dir, ctx, func(ctx context.Context) error {
		return app.Run(ctx, args, app.Options{Registerer: reg})
	})
}

// CCMKubeconfig applies the chart's RBAC and writes dir/kubeconfig with a
// token for the CCM's ServiceAccount, as the chart's pod would get it; it
// returns the file's path. A benchmark does this before its timer starts.
func (cp *ControlPlane) CCMKubeconfig(ctx context.Context, dir string) (string, error) {
	sa, err := cp.ApplyChartRBAC()
	if err != nil {
		return "", err
	}
	cfg, err := cp.ServiceAccountConfig(ctx, ChartNamespace, sa)
	if err != nil {
		return "", err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig, cfg); err != nil {
		return "", err
	}
	return kubeconfig, nil
}

// StartCCM is RunCCM for the length of a test.
func (cp *ControlPlane) StartCCM(ctx context.Context, t testing.TB, cloudConf string, extra ...string) {
	t.Helper()
	stop, err := cp.RunCCM(ctx, cloudConf, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
}

// RunApprover runs stackward-approver in-process as the chart's
// ServiceAccount, with leader election on as in the chart, until stop is
// called or ctx is done.
// Zero limits in opts take the binary's flag defaults.
func (cp *ControlPlane) RunApprover(ctx context.Context, cloudConf string, opts approver.Options) (stop func(), err error) {
	return cp.RunApproverWith(ctx, cloudConf, opts, nil)
}

// RunApproverWith is RunApprover with process settings changed by edit
// (e.g. --sign-with-ca-dir) before it starts.
func (cp *ControlPlane) RunApproverWith(ctx context.Context, cloudConf string, opts approver.Options, edit func(*approver.Config)) (stop func(), err error) {
	acfg := approver.Config{
		CloudConfig:        cloudConf,
		LeaderElection:     approver.LeaderElection{Enabled: true, Namespace: ChartNamespace},
		MetricsBindAddress: "0",
	}
	if edit != nil {
		edit(&acfg)
	}
	var set []string
	if acfg.SignWithCADir != "" {
		set = append(set, "approver.signer.enabled=true") // the chart's RBAC for signing
	}
	if _, err := cp.ApplyChartRBAC(set...); err != nil {
		return nil, err
	}
	cfg, err := cp.ServiceAccountConfig(ctx, ChartNamespace, ChartApproverServiceAccount)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 100, 200
	acfg.RESTConfig = cfg
	if opts.MaxPendingPerNode == 0 {
		opts.MaxPendingPerNode = approver.DefaultMaxPendingPerNode
	}
	if opts.CloudQPS == 0 {
		opts.CloudQPS, opts.CloudBurst = approver.DefaultCloudQPS, approver.DefaultCloudBurst
	}
	if opts.Registerer == nil {
		opts.Registerer = prometheus.NewRegistry()
	}
	// As the chart passes them: never certify the lab's Services or apiserver.
	if len(opts.ServiceCIDRs) == 0 {
		opts.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix(LabServiceCIDR)}
	}
	if len(opts.ControlPlaneEndpoints) == 0 {
		opts.ControlPlaneEndpoints = []netip.Addr{netip.MustParseAddr(ControlPlaneIP)}
	}
	acfg.Options = opts
	return runInProcess("stackward-approver", "", ctx, func(ctx context.Context) error {
		return approver.Run(ctx, acfg)
	})
}

// StartApprover is RunApprover for the length of a test.
func (cp *ControlPlane) StartApprover(ctx context.Context, t testing.TB, cloudConf string, opts approver.Options) {
	t.Helper()
	stop, err := cp.RunApprover(ctx, cloudConf, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
}

// runInProcess runs a component until stop, which cancels it, waits up to
// 20 s for it to return and removes dir (once, however often it is called). A component that fails within its
// first second is an error of the start.
func runInProcess(name, dir string, ctx context.Context, run func(context.Context) error) (func(), error) {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(runCtx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				fmt.Fprintf(os.Stderr, "%s did not stop within 20s of cancellation\n", name)
			}
			if dir != "" {
				_ = os.RemoveAll(dir)
			}
		})
	}
	select {
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("%s exited at start: %w", name, err)
	case <-time.After(time.Second):
		return stop, nil
	}
}
