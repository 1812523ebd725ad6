package loadbalancer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// BenchmarkSharedLoadBalancer measures what a Service sharing another's
// load balancer (loadbalancer.openstack.org/load-balancer-id) costs in
// Octavia: 4 Services join one load balancer (one TCP port, two nodes, a
// simulator that stays PENDING 100 ms after each change), then leave it.
// Reported per sharing Service: all Octavia calls and the writes among them,
// to join (until its Ensure succeeds) and to leave (until its Delete does).
// Run with
//
//	go test -run '^$' -bench SharedLoadBalancer -benchtime 1x ./pkg/loadbalancer/
func BenchmarkSharedLoadBalancer(b *testing.B) {
	const sharers, delay = 4, 100 * time.Millisecond
	for range b.N {
		env := newSimEnv(b, delay)
		env.m.Requeue = delay
		env.m.Config.MaxSharedLB = sharers + 1
		ctx := context.Background()
		nodes := simNodes("10.0.0.11", "10.0.0.12")
		if err := untilDone(func() error {
			_, err := env.m.Ensure(ctx, "bench", simService("creator", 80, 30080, nil), nodes)
			return err
		}); err != nil {
			b.Fatal(err)
		}
		found, err := env.m.Octavia.FindLoadBalancers(ctx, "kube_service_bench_shop_creator", loadbalancer.ClusterTag("uid-1"))
		if err != nil || len(found) != 1 {
			b.Fatalf("creator's load balancer: %v %v", found, err)
		}
		svcs := make([]*corev1.Service, sharers)
		for i := range svcs {
			svcs[i] = simService(fmt.Sprintf("sharer-%d", i), int32(8000+i), int32(31000+i),
				map[string]string{loadbalancer.AnnotationLoadBalancerID: found[0].ID})
		}
		env.sim.ResetCalls()
		for _, svc := range svcs {
			if err := untilDone(func() error { _, err := env.m.Ensure(ctx, "bench", svc, nodes); return err }); err != nil {
				b.Fatal(err)
			}
		}
		joinCalls, joinWrites := octaviaCalls(env.sim)
		env.sim.ResetCalls()
		for _, svc := range svcs {
			if err := untilDone(func() error { return env.m.Delete(ctx, "bench", svc) }); err != nil {
				b.Fatal(err)
			}
		}
		leaveCalls, leaveWrites := octaviaCalls(env.sim)
		b.ReportMetric(float64(joinCalls)/sharers, "join-octavia-calls/service")
		b.ReportMetric(float64(joinWrites)/sharers, "join-octavia-writes/service")
		b.ReportMetric(float64(leaveCalls)/sharers, "leave-octavia-calls/service")
		b.ReportMetric(float64(leaveWrites)/sharers, "leave-octavia-writes/service")
	}
}

// untilDone calls fn until it succeeds, sleeping as each RetryError asks.
func untilDone(fn func() error) error {
	for range 200 {
		err := fn()
		var re *api.RetryError
		if !errors.As(err, &re) {
			return err
		}
		time.Sleep(re.RetryAfter())
	}
	return errors.New("not done after 200 rounds")
}

// octaviaCalls counts the Octavia calls the simulator saw, and the writes
// among them.
func octaviaCalls(sim *cloudsim.Sim) (calls, writes int) {
	for k, n := range sim.Calls() {
		if !strings.HasPrefix(k, cloudsim.ServiceLoadBalancer+".") {
			continue
		}
		calls += n
		if last := lastPart(k); last != "list" && last != "get" && last != "status" {
			writes += n
		}
	}
	return calls, writes
}
