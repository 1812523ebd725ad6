package approver

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// eventAggregator keeps the audit trail of a join burst at a few Events
// instead of one per request. Per outcome (Event type and reason) the
// first Event of a window is recorded at once; the others of that window
// are recorded as one summary Event, on the last of them, naming them all.
// Every request still carries its own decision as its condition (reason and
// message). Denials never go through here: each gets its own Event.
type eventAggregator struct {
	recorder record.EventRecorder
	window   time.Duration

	mu     sync.Mutex
	groups map[eventKey]*eventGroup
}

type eventKey struct{ eventType, reason string }

type eventGroup struct {
	last  *certificatesv1.CertificateSigningRequest
	names []string
	timer *time.Timer
}

// maxNamesPerEvent bounds a summary's message; the count is always exact.
const maxNamesPerEvent = 50

func newEventAggregator(recorder record.EventRecorder, window time.Duration) *eventAggregator {
	return &eventAggregator{recorder: recorder, window: window, groups: map[eventKey]*eventGroup{}}
}

// fold records an Event for csr, or counts it into its window's summary.
func (a *eventAggregator) fold(csr *certificatesv1.CertificateSigningRequest, eventType, reason, message string) {
	if a.window <= 0 {
		a.recorder.Event(csr, eventType, reason, message)
		return
	}
	k := eventKey{eventType, reason}
	a.mu.Lock()
	if g := a.groups[k]; g != nil {
		g.last = csr
		g.names = append(g.names, csr.Name)
		a.mu.Unlock()
		return
	}
	g := &eventGroup{}
	g.timer = time.AfterFunc(a.window, func() { a.flushGroup(k, g) })
	a.groups[k] = g
	a.mu.Unlock()
	a.recorder.Event(csr, eventType, reason, message)
}

// flush records every pending summary now (at shutdown).
func (a *eventAggregator) flush() {
	a.mu.Lock()
	groups := a.groups
	a.groups = map[eventKey]*eventGroup{}
	a.mu.Unlock()
	for k, g := range groups {
		g.timer.Stop()
		a.record(k, g)
	}
}

func (a *eventAggregator) flushGroup(k eventKey, g *eventGroup) {
	a.mu.Lock()
	if a.groups[k] != g {
		a.mu.Unlock()
		return // flushed already
	}
	delete(a.groups, k)
	a.mu.Unlock()
	a.record(k, g)
}

func (a *eventAggregator) record(k eventKey, g *eventGroup) {
	if len(g.names) == 0 {
		return
	}
	names := g.names
	more := ""
	if len(names) > maxNamesPerEvent {
		more = fmt.Sprintf(" and %d more", len(names)-maxNamesPerEvent)
		names = names[:maxNamesPerEvent]
	}
	what := "Approved"
	if k.eventType == corev1.EventTypeWarning {
		what = "Left pending, will retry"
	}
	a.recorder.Eventf(g.last, k.eventType, k.reason,
		"%s: %d more kubelet serving CSR(s) with reason %s within %s (each CSR's condition or the log has the details): %s%s",
		what, len(g.names), k.reason, a.window, strings.Join(names, ", "), more)
}

// countingEventSink counts the Event writes of the broadcaster. New Events
// go through their own limiter (limiter nil: none), so that a flood of
// requests cannot spend the write budget approvals need: beyond it they are
// dropped and counted. Updates of an Event's count are not limited (the
// broadcaster's correlator already folds repeats into them).
type countingEventSink struct {
	typedcorev1.EventSinkImpl
	writes  *prometheus.CounterVec
	limiter *rate.Limiter
	dropped prometheus.Counter
}

func (s *countingEventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	if s.limiter != nil && !s.limiter.Allow() {
		s.dropped.Inc()
		return e, nil
	}
	s.writes.WithLabelValues("events", "create").Inc()
	return s.EventSinkImpl.Create(e)
}

func (s *countingEventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	s.writes.WithLabelValues("events", "update").Inc()
	return s.EventSinkImpl.Update(e)
}

func (s *countingEventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	s.writes.WithLabelValues("events", "patch").Inc()
	return s.EventSinkImpl.Patch(e, data)
}
