package openstack

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestWaitForClientsWaitsOutAnOutageOnly(t *testing.T) {
	for _, tc := range []struct {
		name     string
		errs     []error // build's results before it succeeds
		wantErr  bool
		wantCall int
	}{
		{name: "Keystone 503 twice, then up", errs: []error{httpError(503, ""), fmt.Errorf("authenticate: %w", httpError(503, ""))}, wantCall: 3},
		{name: "429 and a timeout", errs: []error{httpError(429, "1"), timeoutErr{}}, wantCall: 3},
		{name: "bad credentials are not waited out", errs: []error{httpError(401, "")}, wantErr: true, wantCall: 1},
		{name: "a broken cloud.conf is not waited out", errs: []error{errors.New("cloud.conf:3: [Global] auth-url: missing")}, wantErr: true, wantCall: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			var slept []time.Duration
			sleep := func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
			v, err := waitForClients(context.Background(), "test", func(context.Context) (string, error) {
				calls++
				if calls <= len(tc.errs) {
					return "", tc.errs[calls-1]
				}
				return "clients", nil
			}, sleep)
			if calls != tc.wantCall {
				t.Errorf("build called %d times, want %d", calls, tc.wantCall)
			}
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %q, want the error", v)
				}
				if len(slept) != 0 {
					t.Errorf("waited %v before giving up on a permanent error", slept)
				}
				return
			}
			if err != nil || v != "clients" {
				t.Fatalf("got %q, %v", v, err)
			}
			if len(slept) != len(tc.errs) || slept[1] <= slept[0]/2 {
				t.Errorf("backoff %v: want one growing wait per failure", slept)
			}
		})
	}
}

func TestWaitForClientsStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	_, err := waitForClients(ctx, "test", func(context.Context) (int, error) {
		calls++
		return 0, httpError(503, "")
	}, func(ctx context.Context, _ time.Duration) error { cancel(); return ctx.Err() })
	if err == nil || calls != 1 {
		t.Fatalf("after cancel: err %v, %d calls; want the last cloud error after one call", err, calls)
	}
}
