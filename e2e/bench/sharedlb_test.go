//go:build e2e && bench

package bench

import "testing"

// TestBenchSharedLoadBalancer puts pkg/loadbalancer's
// BenchmarkSharedLoadBalancer (Services joining and leaving a load balancer
// another Service created) into the report: Octavia calls, and writes among
// them, per sharing Service.
func TestBenchSharedLoadBalancer(t *testing.T) {
	m := goBench(t, "BenchmarkSharedLoadBalancer")
	put(t, "loadbalancer_shared", map[string]any{
		"join_octavia_calls_per_service":   m["join-octavia-calls/service"],
		"join_octavia_writes_per_service":  m["join-octavia-writes/service"],
		"leave_octavia_calls_per_service":  m["leave-octavia-calls/service"],
		"leave_octavia_writes_per_service": m["leave-octavia-writes/service"],
		"sharing_services":                 4,
		"pending_seconds":                  0.1,
	})
}
