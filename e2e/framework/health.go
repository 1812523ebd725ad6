package framework

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// HealthCheck is one cheap question to a service that only a working
// service answers (a token issued, a list served, a process running).
type HealthCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// healthCheckTimeout bounds one check: a frozen service must fail it, not
// hang the loop.
const healthCheckTimeout = 10 * time.Second

// WaitHealthy runs every check each round, every interval, until one round
// passes them all, and returns how long that took. After timeout it
// returns an error naming each check that failed in the last round and
// why.
func WaitHealthy(ctx context.Context, checks []HealthCheck, interval, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		var failed []error
		for _, c := range checks {
			cctx, ccancel := context.WithTimeout(ctx, healthCheckTimeout)
			err := c.Check(cctx)
			ccancel()
			if err != nil {
				failed = append(failed, fmt.Errorf("%s: %w", c.Name, err))
			}
		}
		if len(failed) == 0 {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("not healthy after %s: %w", timeout, errors.Join(failed...))
		case <-time.After(interval):
		}
	}
}
