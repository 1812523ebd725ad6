package framework

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stackward/stackward/pkg/approver"
	"github.com/stackward/stackward/pkg/provider/app"
)

// Stackward is stackward-ccm and stackward-approver running in this process
// as the chart's ServiceAccount (token from the TokenRequest API, RBAC
// applied from the chart), as the chart's pod runs them.
type Stackward struct {
	// ApproverMetrics gathers the approver's metrics
	// (stackward_csr_decisions_total).
	ApproverMetrics *prometheus.Registry

	cancel context.CancelFunc
	ccm    chan error
	appr   chan error
}

// StackwardOptions tune the in-process Stackward.
type StackwardOptions struct {
	// CloudConf is the cloud.conf both read (see Cloud.WriteCloudConf).
	CloudConf string
	// Dir receives the CCM's kubeconfig.
	Dir string
	// NoCCM runs the approver only.
	NoCCM bool
}

// StartStackward applies the chart's RBAC and starts both components; Stop
// ends them. The CCM runs without leader election (in-process, see app.Run);
// the approver with it, as in the chart.
func (cp *ControlPlane) StartStackward(ctx context.Context, opts StackwardOptions) (*Stackward, error) {
	sa, err := cp.ApplyChartRBAC()
	if err != nil {
		return nil, err
	}
	cfg, err := cp.ServiceAccountConfig(ctx, ChartNamespace, sa)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s := &Stackward{ApproverMetrics: prometheus.NewRegistry(), cancel: cancel, appr: make(chan error, 1)}
	go func() {
		s.appr <- approver.Run(runCtx, approver.Config{
			Options: approver.Options{
				MaxPendingPerNode: approver.DefaultMaxPendingPerNode,
				CloudQPS:          approver.DefaultCloudQPS,
				CloudBurst:        approver.DefaultCloudBurst,
				Registerer:        s.ApproverMetrics,
			},
			RESTConfig:         cfg,
			CloudConfig:        opts.CloudConf,
			LeaderElection:     approver.LeaderElection{Enabled: true, Namespace: ChartNamespace},
			MetricsBindAddress: "0",
		})
	}()
	if !opts.NoCCM {
		kubeconfig := filepath.Join(opts.Dir, "ccm.kubeconfig")
		if err := cp.WriteKubeconfig(kubeconfig, cfg); err != nil {
			s.Stop()
			return nil, err
		}
		s.ccm = make(chan error, 1)
		go func() {
			s.ccm <- app.Run(runCtx, []string{
				"--kubeconfig=" + kubeconfig, "--cloud-config=" + opts.CloudConf, "--cluster-name=lab",
				"--leader-elect=false", "--secure-port=0",
				"--node-monitor-period=2s", "--node-status-update-frequency=2s",
			}, app.Options{Registerer: prometheus.NewRegistry()})
		}()
	}
	// Both fail fast on a bad configuration.
	select {
	case err := <-s.appr:
		s.appr <- err
		s.Stop()
		return nil, fmt.Errorf("stackward-approver exited at start: %w", err)
	case err := <-s.ccm:
		s.ccm <- err
		s.Stop()
		return nil, fmt.Errorf("stackward-ccm exited at start: %w", err)
	case <-time.After(time.Second):
	}
	return s, nil
}

// Stop cancels both and waits for them (up to 20 s each); it returns the
// approver's error, if any.
func (s *Stackward) Stop() error {
	s.cancel()
	var errs []error
	for name, ch := range map[string]chan error{"stackward-approver": s.appr, "stackward-ccm": s.ccm} {
		if ch == nil {
			continue
		}
		select {
		case err := <-ch:
			if err != nil && !errors.Is(err, context.Canceled) && name == "stackward-approver" {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
		case <-time.After(20 * time.Second):
			errs = append(errs, fmt.Errorf("%s did not stop within 20s of cancellation", name))
		}
	}
	return errors.Join(errs...)
}
