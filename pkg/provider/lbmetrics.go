package provider

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/cloud-provider/api"
)

// Outcomes of one load balancer reconcile of a Service (the "outcome"
// label).
const (
	lbOutcomeSuccess = "success"
	// lbOutcomeRequeued is Octavia still busy (a RetryError): progress,
	// not a failure; the service controller syncs the Service again.
	lbOutcomeRequeued = "requeued"
	lbOutcomeError    = "error"
)

// lbMetrics time each reconcile the service controller asks of the
// provider for one Service (ensure, update, delete) and count its
// outcomes. The Service's name is in the logs and Events, not in a label:
// Services come and go and would grow the series without bound.
type lbMetrics struct {
	duration *prometheus.HistogramVec
}

func newLBMetrics(reg prometheus.Registerer) (*lbMetrics, error) {
	d := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "stackward_service_lb_reconcile_duration_seconds",
		Help: "Time of one load balancer reconcile of a Service (operation ensure, update or delete), cloud calls and waits included, " +
			"by outcome: success, requeued (Octavia busy, synced again later) or error. Its _count is the number of reconciles.",
		Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	}, []string{"operation", "outcome"})
	if reg == nil {
		return &lbMetrics{duration: d}, nil
	}
	if err := reg.Register(d); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, fmt.Errorf("register load balancer metrics: %w", err)
		}
		existing, ok := are.ExistingCollector.(*prometheus.HistogramVec)
		if !ok {
			return nil, fmt.Errorf("register load balancer metrics: %w", err)
		}
		// The CCM run again in one process (tests): keep counting on the
		// collector the registry serves.
		d = existing
	}
	return &lbMetrics{duration: d}, nil
}

// observe records one reconcile that started at start and ended with err.
func (m *lbMetrics) observe(operation string, start time.Time, err error) {
	outcome := lbOutcomeSuccess
	var retry *api.RetryError
	switch {
	case errors.As(err, &retry):
		outcome = lbOutcomeRequeued
	case err != nil:
		outcome = lbOutcomeError
	}
	m.duration.WithLabelValues(operation, outcome).Observe(time.Since(start).Seconds())
}
