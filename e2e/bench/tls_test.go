//go:build e2e && bench

package bench

import "testing"

// TestBenchTLSLoadBalancers puts pkg/loadbalancer's
// BenchmarkTLSServicesToActive (100 TLS Services: a TERMINATED_HTTPS
// listener with a Barbican container and X-Forwarded-For, a 2 s PENDING
// phase) into the report: the cloud calls per TLS Service until ACTIVE,
// by service, and per steady-state resync. `make bench` runs it with
// BenchmarkServicesToActive and passes the output in
// STACKWARD_BENCH_GOBENCH.
func TestBenchTLSLoadBalancers(t *testing.T) {
	m := goBench(t, "BenchmarkTLSServicesToActive")
	put(t, "loadbalancer_tls_service", map[string]any{
		"services": 100, "pending_seconds": 2, "workers": 10,
		"octavia_calls_per_service":  m["octavia-calls/service"],
		"neutron_calls_per_service":  m["neutron-calls/service"],
		"barbican_calls_per_service": m["barbican-calls/service"],
		"cloud_calls_per_service":    m["cloud-calls/service"],
		"resync_calls_per_service":   m["resync-calls/service"],
		"seconds_to_all_active":      m["s-to-all-active"],
	})
}
