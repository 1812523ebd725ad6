package openstack

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/prometheus/client_golang/prometheus"
)

func httpError(code int, retryAfter string) error {
	h := http.Header{}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	return gophercloud.ErrUnexpectedResponseCode{Actual: code, ResponseHeader: h}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

// testCaller returns a Caller on its own registry whose sleeps are recorded
// instead of waited.
func testCaller(t *testing.T, policy RetryPolicy) (*Caller, *prometheus.Registry, *[]time.Duration) {
	t.Helper()
	reg := prometheus.NewRegistry()
	c, err := NewCaller(reg, policy)
	if err != nil {
		t.Fatal(err)
	}
	var slept []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d)
		return ctx.Err()
	}
	return c, reg, &slept
}

func TestCallerRetries(t *testing.T) {
	policy := RetryPolicy{MaxAttempts: 4, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 150 * time.Millisecond, MaxElapsed: 10 * time.Second}
	tests := []struct {
		name         string
		errs         []error // returned by successive attempts; nil after the list
		wantAttempts int
		wantErr      bool
		wantCodes    map[string]float64
		wantSleeps   []time.Duration // exact, or nil to check only the count
	}{
		{name: "success is one attempt", wantAttempts: 1},
		{name: "5xx is retried until it succeeds", errs: []error{httpError(503, ""), httpError(500, "")},
			wantAttempts: 3, wantCodes: map[string]float64{"503": 1, "500": 1}},
		{name: "404 is not retried", errs: []error{httpError(404, "")},
			wantAttempts: 1, wantErr: true, wantCodes: map[string]float64{"404": 1}},
		{name: "403 is not retried", errs: []error{httpError(403, "")},
			wantAttempts: 1, wantErr: true, wantCodes: map[string]float64{"403": 1}},
		{name: "429 waits as long as Retry-After says", errs: []error{httpError(429, "3")},
			wantAttempts: 2, wantCodes: map[string]float64{"429": 1}, wantSleeps: []time.Duration{3 * time.Second}},
		{name: "a Retry-After beyond the time budget gives up at once", errs: []error{httpError(429, "60")},
			wantAttempts: 1, wantErr: true, wantCodes: map[string]float64{"429": 1}, wantSleeps: []time.Duration{}},
		{name: "timeouts are retried and counted as timeout", errs: []error{timeoutErr{}},
			wantAttempts: 2, wantCodes: map[string]float64{"timeout": 1}},
		{name: "attempts are bounded", errs: []error{httpError(502, ""), httpError(502, ""), httpError(502, ""), httpError(502, ""), httpError(502, "")},
			wantAttempts: 4, wantErr: true, wantCodes: map[string]float64{"502": 4}},
		{name: "an unknown error is not retried", errs: []error{errors.New("decode: bad JSON")},
			wantAttempts: 1, wantErr: true, wantCodes: map[string]float64{"other": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, reg, slept := testCaller(t, policy)
			attempts := 0
			err := c.Do(context.Background(), ServiceCompute, "get_server", func(context.Context) error {
				attempts++
				if attempts <= len(tt.errs) {
					return tt.errs[attempts-1]
				}
				return nil
			})
			if attempts != tt.wantAttempts {
				t.Errorf("attempts = %d, want %d", attempts, tt.wantAttempts)
			}
			if (err != nil) != tt.wantErr {
				t.Errorf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if len(*slept) != tt.wantAttempts-1 && tt.wantSleeps == nil {
				t.Errorf("slept %v, want %d sleeps", *slept, tt.wantAttempts-1)
			}
			if tt.wantSleeps != nil && !equalDurations(*slept, tt.wantSleeps) {
				t.Errorf("slept %v, want %v", *slept, tt.wantSleeps)
			}
			for _, d := range *slept {
				if tt.wantSleeps == nil && (d < 80*time.Millisecond || d > 180*time.Millisecond) {
					t.Errorf("backoff %v outside [80ms, 180ms]", d)
				}
			}
			if n := histogramCount(t, reg, "compute", "get_server"); n != uint64(tt.wantAttempts) {
				t.Errorf("observed %d durations, want one per attempt (%d)", n, tt.wantAttempts)
			}
			got := errorCounts(t, reg, "compute", "get_server")
			if len(got) != len(tt.wantCodes) {
				t.Errorf("error counts = %v, want %v", got, tt.wantCodes)
			}
			for code, want := range tt.wantCodes {
				if got[code] != want {
					t.Errorf("errors{code=%s} = %v, want %v", code, got[code], want)
				}
			}
		})
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// errorCounts returns stackward_cloud_request_errors_total by code.
func errorCounts(t *testing.T, reg *prometheus.Registry, service, operation string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "stackward_cloud_request_errors_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["service"] == service && labels["operation"] == operation {
				out[labels["code"]] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func histogramCount(t *testing.T, reg *prometheus.Registry, service, operation string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "stackward_cloud_request_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["service"] == service && labels["operation"] == operation {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

func TestCallerStopsWhenTheContextEnds(t *testing.T) {
	c, _, _ := testCaller(t, RetryPolicy{MaxAttempts: 5})
	ctx, cancel := context.WithCancel(context.Background())
	attempts := 0
	err := c.Do(ctx, ServiceCompute, "list_servers", func(context.Context) error {
		attempts++
		cancel()
		return httpError(503, "")
	})
	if attempts != 1 || err == nil {
		t.Fatalf("attempts = %d, err = %v; want 1 attempt and the error", attempts, err)
	}
	if !gophercloud.ResponseCodeIs(err, 503) {
		t.Errorf("the cloud's error should come back unchanged, got %v", err)
	}
}

func TestNewCallerReusesRegisteredMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := NewCaller(reg, RetryPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewCaller(reg, RetryPolicy{})
	if err != nil {
		t.Fatalf("second NewCaller on the same registry: %v", err)
	}
	_ = a.Do(context.Background(), ServiceNetwork, "list_ports", func(context.Context) error { return nil })
	_ = b.Do(context.Background(), ServiceNetwork, "list_ports", func(context.Context) error { return nil })
	if n := histogramCount(t, reg, "network", "list_ports"); n != 2 {
		t.Errorf("observations = %d, want 2 on the shared histogram", n)
	}
}
