package loadbalancer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// BenchmarkTLSServicesToActive is BenchmarkServicesToActive's Stackward
// run for TLS Services: 100 Services with one port 443 whose listener
// terminates TLS with a Barbican certificate container (and inserts
// X-Forwarded-For), two nodes, Octavia PENDING for 2 s after each change,
// 10 workers. It reports the cloud calls per Service by service until
// every load balancer is ACTIVE with its floating IP, and the calls of one
// steady-state resync per Service. The name matches `make bench`'s
// -bench ServicesToActive.
func BenchmarkTLSServicesToActive(b *testing.B) {
	const services, workers, delay = 100, 10, 2 * time.Second
	for range b.N {
		env := newSimEnv(b, delay)
		env.m.Requeue = delay
		ref := simCertificate(b, env.octavia, "bench-tls")
		svcs := make([]*corev1.Service, services)
		for i := range svcs {
			svcs[i] = &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("tls-%03d", i), Annotations: map[string]string{
					loadbalancer.AnnotationTLSContainerRef: ref, loadbalancer.AnnotationXForwardedFor: "true"}},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
					Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443}}}}
		}
		env.sim.ResetCalls()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		start := time.Now()
		err := runManager(ctx, env, svcs, workers)
		elapsed := time.Since(start)
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		create := perService(env.sim.Calls(), services)
		env.sim.ResetCalls()
		for _, svc := range svcs {
			if _, err := env.m.Ensure(ctx, "bench", svc, benchNodes); err != nil {
				cancel()
				b.Fatalf("resync %s: %v", svc.Name, err)
			}
		}
		cancel()
		steady := perService(env.sim.Calls(), services)
		b.ReportMetric(create[cloudsim.ServiceLoadBalancer], "octavia-calls/service")
		b.ReportMetric(create[cloudsim.ServiceNetwork], "neutron-calls/service")
		b.ReportMetric(create[cloudsim.ServiceKeyManager], "barbican-calls/service")
		b.ReportMetric(create["all"], "cloud-calls/service")
		b.ReportMetric(steady["all"], "resync-calls/service")
		b.ReportMetric(elapsed.Seconds(), "s-to-all-active")
	}
}

// perService sums calls by service ("all" for every service but identity)
// and divides by n.
func perService(calls map[string]int, n int) map[string]float64 {
	out := map[string]float64{}
	for k, c := range calls {
		svc, _, _ := strings.Cut(k, ".")
		if svc == cloudsim.ServiceIdentity {
			continue
		}
		out[svc] += float64(c) / float64(n)
		out["all"] += float64(c) / float64(n)
	}
	return out
}
