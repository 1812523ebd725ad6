package openstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// Service labels of the metrics.
const (
	ServiceIdentity     = "identity"
	ServiceCompute      = "compute"
	ServiceNetwork      = "network"
	ServiceLoadBalancer = "loadbalancer"
)

// RetryPolicy bounds the retries of one cloud call. Only failures that may
// go away by themselves are retried: 5xx, 429 and timeouts (and a refused
// or reset connection). A 404 or any other 4xx is an answer, not a blip.
type RetryPolicy struct {
	// MaxAttempts counts the first try; 1 disables retries.
	MaxAttempts int
	// InitialBackoff is the wait before the first retry; it doubles after
	// each retry up to MaxBackoff, with ±20% jitter.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// MaxElapsed bounds the whole call, waits included. A wait that would
	// cross it (a long Retry-After, say) is not started: the last error is
	// returned instead.
	MaxElapsed time.Duration
}

// DefaultRetryPolicy rides out a short cloud hiccup without holding a
// controller worker for long.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 5, InitialBackoff: 250 * time.Millisecond, MaxBackoff: 4 * time.Second, MaxElapsed: 20 * time.Second}
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = d.MaxAttempts
	}
	if p.InitialBackoff <= 0 {
		p.InitialBackoff = d.InitialBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = d.MaxBackoff
	}
	if p.MaxElapsed <= 0 {
		p.MaxElapsed = d.MaxElapsed
	}
	return p
}

// Caller is the one helper every cloud call goes through: it times each
// attempt, counts failures by status code, and retries what is safe to
// retry. Build it with NewCaller; every adapter of this package uses the
// Caller of its Clients.
type Caller struct {
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	upstream *upstreamCallMetrics // compatmetrics.go
	policy   RetryPolicy
	// sleep waits for d or until ctx ends; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
	now   func() time.Time
}

// NewCaller registers the cloud call metrics on reg (a nil reg keeps them
// unregistered) and returns a Caller retrying with policy. Registering on a
// registry that already has them reuses the registered collectors.
func NewCaller(reg prometheus.Registerer, policy RetryPolicy) (*Caller, error) {
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "stackward_cloud_request_duration_seconds",
		Help:    "Duration of OpenStack API requests (each attempt), by service and operation.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
	}, []string{"service", "operation"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stackward_cloud_request_errors_total",
		Help: "Failed OpenStack API requests (each attempt), by service, operation and HTTP status code (or timeout, canceled, network).",
	}, []string{"service", "operation", "code"})
	if reg != nil {
		var err error
		if duration, err = register(reg, duration); err != nil {
			return nil, err
		}
		if errs, err = register(reg, errs); err != nil {
			return nil, err
		}
	}
	upstream, err := newUpstreamCallMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Caller{duration: duration, errors: errs, upstream: upstream, policy: policy.withDefaults(), sleep: sleepCtx, now: time.Now}, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("register cloud metrics: %w", err)
	}
	return c, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Do runs fn, recording it as one operation of service, and retrying it
// only if operations.go declares the operation safe to repeat. The error
// is fn's last error, unwrapped by nothing, so errors.Is and
// gophercloud.ResponseCodeIs still work on it.
func (c *Caller) Do(ctx context.Context, service, operation string, fn func(ctx context.Context) error) error {
	start := c.now()
	backoff := c.policy.InitialBackoff
	attempts := c.policy.MaxAttempts
	if !retryable(service, operation) {
		attempts = 1
	}
	for attempt := 1; ; attempt++ {
		t0 := c.now()
		err := fn(ctx)
		took := c.now().Sub(t0).Seconds()
		c.duration.WithLabelValues(service, operation).Observe(took)
		if c.upstream != nil {
			c.upstream.observe(service, operation, took, err != nil)
		}
		if err == nil {
			return nil
		}
		c.errors.WithLabelValues(service, operation, errorCode(ctx, err)).Inc()

		wait, retry := retryAfter(ctx, err)
		if !retry || attempt >= attempts {
			return err
		}
		if wait == 0 {
			wait = jitter(backoff)
			backoff = min(2*backoff, c.policy.MaxBackoff)
		}
		if c.now().Add(wait).Sub(start) > c.policy.MaxElapsed {
			return err
		}
		if deadline, ok := ctx.Deadline(); ok && c.now().Add(wait).After(deadline) {
			return err // the caller would give up before the next attempt
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			return err
		}
	}
}

func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// retryAfter says whether err is worth another attempt and, for a 429 or
// 503 with a Retry-After header, how long the cloud asked us to wait.
func retryAfter(ctx context.Context, err error) (time.Duration, bool) {
	if ctx.Err() != nil {
		return 0, false
	}
	var code gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &code) {
		if code.Actual != http.StatusTooManyRequests && (code.Actual < 500 || code.Actual == http.StatusNotImplemented) {
			return 0, false
		}
		return parseRetryAfter(code.ResponseHeader.Get("Retry-After")), true
	}
	return 0, isTransient(err)
}

func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// isTransient is true for network failures that a retry may fix.
func isTransient(err error) bool {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return true
	}
	return false
}

// errorCode is the code label of a failed attempt.
func errorCode(ctx context.Context, err error) string {
	var code gophercloud.ErrUnexpectedResponseCode
	var ne net.Error
	switch {
	case errors.As(err, &code):
		return strconv.Itoa(code.Actual)
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.As(err, &ne):
		return "network"
	}
	return "other"
}
