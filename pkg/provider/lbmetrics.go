package provider

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/cloud-provider/api"

	"github.com/stackward/stackward/pkg/loadbalancer"
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
//
// The upstream openstack-cloud-controller-manager's
// cloudprovider_openstack_reconcile_{duration_seconds,total,errors_total}
// {operation="loadbalancer_ensure|update|delete"} are recorded too, so that
// its dashboards keep working after the switch. A requeue (Octavia busy)
// is a reconcile but not an error there; upstream waits for Octavia inside
// one reconcile instead, so its durations are longer and its totals lower.
type lbMetrics struct {
	duration *prometheus.HistogramVec
	// stuck counts the load balancers stuck in PENDING_* (watch.go).
	stuck *stuckGauge
	// upstream's series
	upDuration        *prometheus.HistogramVec
	upTotal, upErrors *prometheus.CounterVec
}

func newLBMetrics(reg prometheus.Registerer, lbs *loadbalancer.Manager) (*lbMetrics, error) {
	m := &lbMetrics{
		stuck: newStuckGauge(),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "stackward_service_lb_reconcile_duration_seconds",
			Help: "Time of one load balancer reconcile of a Service (operation ensure, update or delete), cloud calls and waits included, " +
				"by outcome: success, requeued (Octavia busy, synced again later) or error. Its _count is the number of reconciles.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"operation", "outcome"}),
		upDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "cloudprovider_openstack_reconcile_duration_seconds",
			Help: "Time of one load balancer reconcile of a Service, as the upstream openstack-cloud-controller-manager names it (operation loadbalancer_ensure, _update, _delete).",
			// upstream's buckets
			Buckets: []float64{0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 7.5, 10.0, 12.5, 15.0, 17.5, 20.0, 22.5, 25.0, 27.5, 30.0, 50.0, 75.0, 100.0, 1000.0},
		}, []string{"operation"}),
		upTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cloudprovider_openstack_reconcile_total",
			Help: "Load balancer reconciles of Services, as the upstream openstack-cloud-controller-manager names them.",
		}, []string{"operation"}),
		upErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cloudprovider_openstack_reconcile_errors_total",
			Help: "Load balancer reconciles of Services that failed (a requeue while Octavia is busy is not a failure), as the upstream openstack-cloud-controller-manager names them.",
		}, []string{"operation"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.duration, err = registerOrReuse(reg, m.duration); err != nil {
		return nil, err
	}
	if m.upDuration, err = registerOrReuse(reg, m.upDuration); err != nil {
		return nil, err
	}
	if m.upTotal, err = registerOrReuse(reg, m.upTotal); err != nil {
		return nil, err
	}
	if m.upErrors, err = registerOrReuse(reg, m.upErrors); err != nil {
		return nil, err
	}
	if m.stuck, err = registerOrReuse(reg, m.stuck); err != nil {
		return nil, err
	}
	m.stuck.manager.Store(lbs)
	return m, nil
}

// stuckGauge is stackward_loadbalancers_stuck, read from the Manager at
// each scrape. The Manager is swapped in, not captured, so that a CCM run
// again in one process (tests) reports its own.
type stuckGauge struct {
	desc    *prometheus.Desc
	manager atomic.Pointer[loadbalancer.Manager]
}

func newStuckGauge() *stuckGauge {
	return &stuckGauge{desc: prometheus.NewDesc("stackward_loadbalancers_stuck",
		"Load balancers that Services wait for and that have been PENDING_* for longer than --lb-stuck-after: Octavia stopped applying a change "+
			"(each has a LoadBalancerStuck Warning Event on its Service, and stackward doctor lists them).", nil, nil)}
}

func (g *stuckGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *stuckGauge) Collect(ch chan<- prometheus.Metric) {
	n := 0
	if m := g.manager.Load(); m != nil {
		n = len(m.Stuck())
	}
	ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(n))
}

// registerOrReuse registers c, or, when the CCM runs again in one process
// (tests), returns the collector the registry already serves.
func registerOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("register load balancer metrics: %w", err)
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
	took := time.Since(start).Seconds()
	m.duration.WithLabelValues(operation, outcome).Observe(took)
	up := "loadbalancer_" + operation
	m.upDuration.WithLabelValues(up).Observe(took)
	m.upTotal.WithLabelValues(up).Inc()
	if outcome == lbOutcomeError {
		m.upErrors.WithLabelValues(up).Inc()
	}
}
