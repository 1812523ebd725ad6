package openstack

import (
	"context"
	"time"

	"k8s.io/klog/v2"
)

// Startup backoff: a process that cannot reach Keystone at start waits for
// it instead of exiting, so an outage does not turn into a CrashLoopBackOff
// whose restart delay outlasts the outage.
const (
	startupInitialBackoff = time.Second
	startupMaxBackoff     = 30 * time.Second
)

// WaitForClients calls build until it succeeds, the error is one a retry
// cannot fix (bad credentials, a missing endpoint, a broken cloud.conf), or
// ctx ends. Only what Caller would retry (5xx, 429, timeouts, refused or
// reset connections) is waited out; each failure is logged with the next
// attempt's delay.
func WaitForClients[T any](ctx context.Context, what string, build func(ctx context.Context) (T, error)) (T, error) {
	return waitForClients(ctx, what, build, sleepCtx)
}

func waitForClients[T any](ctx context.Context, what string, build func(ctx context.Context) (T, error), sleep func(context.Context, time.Duration) error) (T, error) {
	logger := klog.FromContext(ctx)
	backoff := startupInitialBackoff
	for attempt := 1; ; attempt++ {
		v, err := build(ctx)
		if err == nil {
			if attempt > 1 {
				logger.Info("Cloud reachable again", "what", what, "attempts", attempt)
			}
			return v, nil
		}
		if _, retry := retryAfter(ctx, err); !retry {
			return v, err
		}
		wait := jitter(backoff)
		logger.Info("Cloud unavailable at start; waiting for it", "what", what, "attempt", attempt, "retryIn", wait.Round(time.Millisecond), "err", err)
		if serr := sleep(ctx, wait); serr != nil {
			return v, err
		}
		backoff = min(2*backoff, startupMaxBackoff)
	}
}
