//go:build e2e && bench

package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
)

const cloudLatency = 20 * time.Millisecond

// TestBenchCloudsim measures the simulator itself, so the other figures
// can show it is not their bottleneck.
func TestBenchCloudsim(t *testing.T) {
	ctx := context.Background()
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{})
	const servers = 10000
	for i := 1; i <= servers; i++ {
		if _, err := cloud.Sim.CreateServer(cloudsim.ServerSpec{Name: fmt.Sprintf("s-%05d", i), NICs: []cloudsim.NICSpec{{Network: framework.LabNetwork}}}); err != nil {
			t.Fatal(err)
		}
	}
	clients := labClients(ctx, t, cloud)
	const lists = 5
	start := time.Now()
	for range lists {
		got, err := clients.Compute.ListServers(ctx, openstack.ListServersOpts{})
		if err != nil || len(got) != servers {
			t.Fatalf("list: %d servers, %v", len(got), err)
		}
	}
	listTime := time.Since(start)

	const tokens = 300
	body := []byte(`{"auth":{"identity":{"methods":["password"],"password":{"user":{"name":"stackward","domain":{"name":"Default"},"password":"lab-password"}}},"scope":{"project":{"name":"lab","domain":{"name":"Default"}}}}}`)
	start = time.Now()
	for range tokens {
		resp, err := http.Post(cloud.AuthURL+"/auth/tokens", "application/json", bytes.NewReader(body))
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("token: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	tokenTime := time.Since(start)
	put(t, "cloudsim", map[string]any{
		"servers":                       servers,
		"full_listing_seconds":          listTime.Seconds() / lists,
		"servers_listed_per_second":     float64(servers*lists) / listTime.Seconds(),
		"detail_pages_per_listing":      PerUnit(cloud.Sim.Calls()["compute.servers.detail"], lists),
		"tokens_issued_per_second":      float64(tokens) / tokenTime.Seconds(),
		"token_issue_mean_milliseconds": tokenTime.Seconds() * 1000 / tokens,
	})
}

// TestBenchCCMInitialization times the CCM initializing registered nodes
// (Node objects as a kubelet registers them) at 20 ms cloud latency, and
// counts the cloud calls per node.
func TestBenchCCMInitialization(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	// cloud-provider's defaults are 1 node-sync worker and 20 apiserver
	// QPS; each initialization is about three apiserver writes.
	for _, tc := range []struct {
		n, workers, apiQPS int
	}{{100, 1, 20}, {1000, 1, 20}, {1000, 10, 20}, {1000, 10, 100}} {
		n := tc.n
		t.Run(fmt.Sprintf("%d nodes %d workers %d qps", n, tc.workers, tc.apiQPS), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			cloud := framework.StartSimCloud(t, framework.SimCloudOptions{Latency: cloudLatency})
			prefix := fmt.Sprintf("init%d-%d-%d-", n, tc.workers, tc.apiQPS)
			for i := 1; i <= n; i++ {
				cloud.CreateServer(t, fmt.Sprintf("%s%04d", prefix, i), i, "m1.small", "az-1")
			}
			registerNodes(ctx, t, cp.Admin, prefix, n)
			cloud.Sim.ResetCalls()
			start := time.Now()
			// --concurrent-node-syncs: cloud-provider's default is 1 worker.
			stop, err := cp.RunCCM(ctx, cloud.CloudConf(t, ""), fmt.Sprintf("--concurrent-node-syncs=%d", tc.workers),
				fmt.Sprintf("--kube-api-qps=%d", tc.apiQPS), fmt.Sprintf("--kube-api-burst=%d", 2*tc.apiQPS))
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
				return countInitialized(ctx, cp.Admin, prefix) == n, nil
			})
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("%d of %d nodes initialized: %v", countInitialized(ctx, cp.Admin, prefix), n, err)
			}
			calls := cloud.Sim.Calls()
			cloudCalls := SumCalls(calls, "compute.", "network.")
			put(t, fmt.Sprintf("ccm_initialize_%d_nodes_%d_workers_%d_qps", n, tc.workers, tc.apiQPS), map[string]any{
				"nodes":                n,
				"node_sync_workers":    tc.workers,
				"kube_api_qps":         tc.apiQPS,
				"cloud_latency_ms":     cloudLatency.Milliseconds(),
				"seconds_to_all":       elapsed.Seconds(),
				"nodes_per_second":     float64(n) / elapsed.Seconds(),
				"cloud_calls":          cloudCalls,
				"cloud_calls_per_node": PerUnit(cloudCalls, n),
				"calls_by_operation":   calls,
			})
			stop()
			if err := cp.Admin.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// registerNodes creates Nodes the way a kubelet with
// --cloud-provider=external registers them.
func registerNodes(ctx context.Context, t *testing.T, client kubernetes.Interface, prefix string, n int) {
	t.Helper()
	parallel(t, n, 20, func(i int) error {
		name := fmt.Sprintf("%s%04d", prefix, i)
		_, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
				"alpha.kubernetes.io/provided-node-ip": framework.NodeIP(i),
			}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{
				Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule,
			}}},
		}, metav1.CreateOptions{})
		return err
	})
}

func countInitialized(ctx context.Context, client kubernetes.Interface, prefix string) int {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0
	}
	done := 0
	for _, n := range nodes.Items {
		if len(n.Name) > len(prefix) && n.Name[:len(prefix)] == prefix && n.Spec.ProviderID != "" && !framework.HasTaint(&n, "node.cloudprovider.kubernetes.io/uninitialized") {
			done++
		}
	}
	return done
}

func labClients(ctx context.Context, t *testing.T, cloud *framework.SimCloud) *openstack.Clients {
	t.Helper()
	cfg, _, err := config.Load(cloud.CloudConf(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	clients, err := openstack.NewClients(ctx, cfg, openstack.ClientOptions{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	return clients
}

// parallel runs fn(1..n) on workers goroutines and fails t on the first error.
func parallel(t *testing.T, n, workers int, fn func(i int) error) {
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					once.Do(func() { t.Errorf("item %d: %v", i, err) })
				}
			}
		}()
	}
	for i := 1; i <= n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// TestBenchLoadBalancers puts pkg/loadbalancer's BenchmarkServicesToActive
// (100 Services, a 2 s PENDING phase, Stackward against the serial
// create-and-wait approach in the same run) into the report; `make bench`
// runs it first and passes its output in STACKWARD_BENCH_GOBENCH.
func TestBenchLoadBalancers(t *testing.T) {
	lb := map[string]any{}
	for _, approach := range []string{"stackward", "serial"} {
		m := goBench(t, "BenchmarkServicesToActive/"+approach)
		lb[approach] = map[string]any{"octavia_calls_per_service": m["octavia-calls/service"], "seconds_to_all_active": m["s-to-all-active"]}
	}
	lb["services"], lb["pending_seconds"], lb["workers"] = 100, 2, 10
	put(t, "loadbalancer_100_services", lb)
}

// goBench is the metrics of one benchmark in the go test -bench output
// that `make bench` runs first and passes in STACKWARD_BENCH_GOBENCH.
func goBench(t *testing.T, name string) map[string]float64 {
	t.Helper()
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
	m, ok := results[name]
	if !ok {
		t.Fatalf("no %s in %s", name, path)
	}
	return m
}
