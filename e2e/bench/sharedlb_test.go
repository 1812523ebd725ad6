//go:build e2e && bench

package bench

import (
	"os"
	"testing"
)

// TestBenchSharedLoadBalancer puts pkg/loadbalancer's
// BenchmarkSharedLoadBalancer (Services joining and leaving a load balancer
// another Service created) into the report: Octavia calls, and writes among
// them, per sharing Service.
func TestBenchSharedLoadBalancer(t *testing.T) {
	path := os.Getenv("STACKWARD_BENCH_GOBENCH")
	if path == "" {
		t.Fatal("STACKWARD_BENCH_GOBENCH is not set: run `make bench`")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	results, err := ParseGoBench(f)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := results["BenchmarkSharedLoadBalancer"]
	if !ok {
		t.Fatalf("no BenchmarkSharedLoadBalancer in %s", path)
	}
	put(t, "loadbalancer_shared", map[string]any{
		"join_octavia_calls_per_service":   m["join-octavia-calls/service"],
		"join_octavia_writes_per_service":  m["join-octavia-writes/service"],
		"leave_octavia_calls_per_service":  m["leave-octavia-calls/service"],
		"leave_octavia_writes_per_service": m["leave-octavia-writes/service"],
		"sharing_services":                 4,
		"pending_seconds":                  0.1,
	})
}
