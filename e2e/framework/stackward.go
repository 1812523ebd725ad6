package framework

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stackward/stackward/pkg/approver"
)

// Stackward is stackward-ccm and stackward-approver running in this process
// as the chart's ServiceAccount (token from the TokenRequest API, RBAC
// applied from the chart), as the chart's pod runs them.
type Stackward struct {
	// ApproverMetrics gathers the approver's metrics
	// (stackward_csr_decisions_total).
	ApproverMetrics *prometheus.Registry

	stops []func()
}

// StackwardOptions tune the in-process Stackward.
type StackwardOptions struct {
	// CloudConf is the cloud.conf both read (see SimCloud.WriteCloudConf).
	CloudConf string
	// Dir is unused; kept for callers written before RunCCM kept its own.
	Dir string
	// NoCCM runs the approver only.
	NoCCM bool
}

// StartStackward starts the approver (leader election on, as in the chart)
// and, unless NoCCM, the CCM (see RunCCM); they run until Stop, whatever
// becomes of ctx.
func (cp *ControlPlane) StartStackward(ctx context.Context, opts StackwardOptions) (*Stackward, error) {
	ctx = context.WithoutCancel(ctx)
	s := &Stackward{ApproverMetrics: prometheus.NewRegistry()}
	stop, err := cp.RunApprover(ctx, opts.CloudConf, approver.Options{Registerer: s.ApproverMetrics})
	if err != nil {
		return nil, err
	}
	s.stops = append(s.stops, stop)
	if !opts.NoCCM {
		stop, err := cp.RunCCM(ctx, opts.CloudConf)
		if err != nil {
			_ = s.Stop() // the start failure is the error to report
			return nil, err
		}
		s.stops = append(s.stops, stop)
	}
	return s, nil
}

// Stop ends both components (each waits up to 20 s).
func (s *Stackward) Stop() error {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
	s.stops = nil
	return nil
}
