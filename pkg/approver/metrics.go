package approver

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes, the "decision" label of the metrics.
const (
	outcomeApproved    = "approved"
	outcomeDenied      = "denied"
	outcomeLeftPending = "left_pending" // would deny, but --leave-pending-on-deny
	outcomeRequeued    = "requeued"     // could not decide; retried with backoff
	outcomeDeferred    = "deferred"     // over the per-node cap; looked at later
	outcomeWaiting     = "waiting"      // the instance is not running; looked at again later
)

// Steps of a decision, the "step" label of the step duration.
const (
	stepEvaluate = "evaluate"
	stepRecord   = "record"
)

// metrics are registered on the Registerer the caller passes in, never on
// the global one, so that tests and several controllers in one process do
// not collide.
type metrics struct {
	decisions *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	// steps splits a decision's time: evaluating (the cloud lookup, shared
	// or not, and the checks) and recording (the apiserver write, client
	// rate limit included), to tell which one a burst waits for.
	steps *prometheus.HistogramVec
	// writes counts what deciding costs the apiserver (approvals, Events);
	// leader election renewals are not decisions and not counted.
	writes *prometheus.CounterVec
	// eventsDropped counts Events over the Event limit, not written.
	eventsDropped prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stackward_csr_decisions_total",
			Help: "Kubelet serving CSRs handled, by outcome (approved, denied, left_pending, requeued, deferred, waiting) and reason.",
		}, []string{"decision", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "stackward_csr_decision_duration_seconds",
			Help:    "Time to evaluate one kubelet serving CSR and record the outcome, cloud lookups included, by outcome.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"decision"}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "stackward_csr_decision_step_duration_seconds",
			Help:    "Time of each step of a decision: evaluate (cloud lookup and checks) and record (the apiserver write of the approval or denial, with the client's rate limit; signing included with --sign-with-ca-dir).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"step"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stackward_approver_apiserver_writes_total",
			Help: "Apiserver writes made to record decisions, by resource (certificatesigningrequests/approval, certificatesigningrequests/status when signing, events) and verb, failed ones included.",
		}, []string{"resource", "verb"}),
		eventsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "stackward_approver_events_dropped_total",
			Help: "Events not written because they were over the approver's own Event rate limit (a flood of requests).",
		}),
	}
	for _, c := range []prometheus.Collector{m.decisions, m.duration, m.steps, m.writes, m.eventsDropped} {
		if err := reg.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if errors.As(err, &already) {
				return nil, fmt.Errorf("register approver metrics: %w (one Registerer per controller)", err)
			}
			return nil, fmt.Errorf("register approver metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) observe(outcome, reason string, seconds float64) {
	m.decisions.WithLabelValues(outcome, reason).Inc()
	m.duration.WithLabelValues(outcome).Observe(seconds)
}
