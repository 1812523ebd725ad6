package approver

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/labels"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/util/workqueue"
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

// workqueueMetrics gives the approver's queue the metrics every Kubernetes
// controller's queue has (workqueue_depth{name} and the rest, as
// k8s.io/component-base names them), on the injected registry rather than
// through the process-wide workqueue.SetProvider.
type workqueueMetrics struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, work              *prometheus.HistogramVec
}

var _ workqueue.MetricsProvider = (*workqueueMetrics)(nil)

func newWorkqueueMetrics(reg prometheus.Registerer) (*workqueueMetrics, error) {
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 10)
	w := &workqueueMetrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "depth",
			Help: "Current depth of workqueue"}, []string{"name"}),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "adds_total",
			Help: "Total number of adds handled by workqueue"}, []string{"name"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "queue_duration_seconds",
			Help: "How long in seconds an item stays in workqueue before being requested.", Buckets: buckets}, []string{"name"}),
		work: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "work_duration_seconds",
			Help: "How long in seconds processing an item from workqueue takes.", Buckets: buckets}, []string{"name"}),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "unfinished_work_seconds",
			Help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration."}, []string{"name"}),
		longest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "longest_running_processor_seconds",
			Help: "How many seconds has the longest running processor for workqueue been running."}, []string{"name"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "retries_total",
			Help: "Total number of retries handled by workqueue"}, []string{"name"}),
	}
	for _, c := range []prometheus.Collector{w.depth, w.adds, w.latency, w.work, w.unfinished, w.longest, w.retries} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register workqueue metrics: %w", err)
		}
	}
	return w, nil
}

func (w *workqueueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return w.depth.WithLabelValues(name)
}
func (w *workqueueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return w.adds.WithLabelValues(name)
}
func (w *workqueueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return w.latency.WithLabelValues(name)
}
func (w *workqueueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return w.work.WithLabelValues(name)
}
func (w *workqueueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return w.unfinished.WithLabelValues(name)
}
func (w *workqueueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return w.longest.WithLabelValues(name)
}
func (w *workqueueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return w.retries.WithLabelValues(name)
}

// pendingCollector reports the kubelet serving requests still waiting for
// a decision, and how long the oldest has waited: the approver's core
// signal (a join that stalls shows here before anywhere else). It reads
// the CSR informer's cache at scrape time. Until that cache has synced (a
// standby replica never syncs it) it reports nothing rather than a
// misleading 0.
type pendingCollector struct {
	csrs   certlisters.CertificateSigningRequestLister
	synced func() bool
	now    func() time.Time
	count  *prometheus.Desc
	oldest *prometheus.Desc
}

func newPendingCollector(csrs certlisters.CertificateSigningRequestLister, synced func() bool, now func() time.Time) *pendingCollector {
	return &pendingCollector{csrs: csrs, synced: synced, now: now,
		count: prometheus.NewDesc("stackward_csr_pending",
			"Kubelet serving CSRs neither approved, denied nor failed, nor issued (signer kubernetes.io/kubelet-serving), as the leader's cache holds them.", nil, nil),
		oldest: prometheus.NewDesc("stackward_csr_oldest_pending_age_seconds",
			"Age of the oldest pending kubelet serving CSR (0: none pending).", nil, nil),
	}
}

func (p *pendingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- p.count
	ch <- p.oldest
}

func (p *pendingCollector) Collect(ch chan<- prometheus.Metric) {
	if !p.synced() {
		return
	}
	all, err := p.csrs.List(labels.Everything())
	if err != nil {
		return // a cache lister does not fail; no sample rather than a wrong one
	}
	n, oldest := 0, 0.0
	now := p.now()
	for _, csr := range all {
		if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || !isPending(csr) || csr.DeletionTimestamp != nil {
			continue
		}
		n++
		oldest = max(oldest, now.Sub(csr.CreationTimestamp.Time).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(p.count, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(p.oldest, prometheus.GaugeValue, oldest)
}
