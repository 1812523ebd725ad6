package openstack

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestUpstreamMetricNamesAreExported(t *testing.T) {
	tests := []struct {
		name               string
		service, operation string
		// codes answer each attempt in turn (0: success)
		codes []int
		// the request label, and the counts upstream's dashboards read
		request           string
		wantTotal, wantEr float64
	}{
		{"a server lookup is upstream's server_get", ServiceCompute, "get_server", []int{0}, "server_get", 1, 0},
		{"an atomic route add is upstream's router_update", ServiceNetwork, "add_extraroutes", []int{0}, "router_update", 1, 0},
		{"a batch member update is upstream's loadbalancer_members_update", ServiceLoadBalancer, "batch_update_members", []int{0}, "loadbalancer_members_update", 1, 0},
		{"a 404 is an error in upstream's count too", ServiceNetwork, "get_port", []int{404}, "port_get", 1, 1},
		{"each attempt of a retried call is counted, the failed one as an error", ServiceLoadBalancer, "get_loadbalancer", []int{503, 0}, "loadbalancer_get", 2, 1},
		{"a call upstream never makes is named in its style", ServiceIdentity, "authenticate", []int{0}, "identity_authenticate", 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, reg, _ := testCaller(t, RetryPolicy{MaxAttempts: 3})
			i := 0
			_ = c.Do(context.Background(), tc.service, tc.operation, func(context.Context) error {
				code := tc.codes[i]
				i++
				if code != 0 {
					return httpError(code, "")
				}
				return nil
			})
			// The registry serves upstream's series under its names (an error
			// series only once a call failed).
			n, err := testutil.GatherAndCount(reg, "openstack_api_request_duration_seconds", "openstack_api_requests_total", "openstack_api_request_errors_total")
			if err != nil {
				t.Fatal(err)
			}
			if want := 2 + min(int(tc.wantEr), 1); n != want {
				t.Errorf("%d upstream series gathered, want %d", n, want)
			}
			if got := testutil.ToFloat64(c.upstream.total.WithLabelValues(tc.request)); got != tc.wantTotal {
				t.Errorf("openstack_api_requests_total{request=%q} = %v, want %v", tc.request, got, tc.wantTotal)
			}
			if got := testutil.ToFloat64(c.upstream.errors.WithLabelValues(tc.request)); got != tc.wantEr {
				t.Errorf("openstack_api_request_errors_total{request=%q} = %v, want %v", tc.request, got, tc.wantEr)
			}
			lint, err := testutil.GatherAndLint(reg, "openstack_api_requests_total")
			if err != nil || len(lint) > 0 {
				t.Errorf("lint: %v %v", lint, err)
			}
		})
	}
}

func TestEveryOperationHasAnUpstreamStyleRequestName(t *testing.T) {
	for service, ops := range retrySafe {
		for op := range ops {
			r := upstreamRequest(service, op)
			if r == "" || strings.HasPrefix(r, "_") || strings.HasSuffix(r, "_") || r == op && strings.Contains(op, "_") {
				t.Errorf("%s/%s: request label %q", service, op, r)
			}
		}
	}
}
