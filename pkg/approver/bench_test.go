package approver

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/openstack"
)

// slowCloud answers by provider ID after a fixed latency, like Nova
// across a network, and counts its calls.
type slowCloud struct {
	latency time.Duration
	mu      sync.Mutex
	byID    map[string]*openstack.Server
	calls   int
}

func (c *slowCloud) ServerOwnership(_ context.Context, srv *openstack.Server) (nodeaddress.CloudView, error) {
	return derivedView(srv), nil
}

func (c *slowCloud) ServerForNode(ctx context.Context, providerID, _ string) (*openstack.Server, error) {
	c.mu.Lock()
	c.calls++
	s := c.byID[providerID]
	c.mu.Unlock()
	select {
	case <-time.After(c.latency):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if s == nil {
		return nil, openstack.ErrNotFound
	}
	return s, nil
}

// BenchmarkJoinBurst: 1,000 nodes ask for serving certificates at once, the
// cloud answers in 20 ms. Reports approvals per second, the latency from
// creation to approval (p50, p99) and cloud calls per approval. The
// apiserver is client-go's fake: this measures the approver, not etcd.
func BenchmarkJoinBurst(b *testing.B) {
	const nodes = 1000
	cloud := &slowCloud{latency: 20 * time.Millisecond, byID: map[string]*openstack.Server{}}
	var objs []*certificatesv1.CertificateSigningRequest
	var nodeObjs []*corev1.Node
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		ip := fmt.Sprintf("10.1.%d.%d", i/200, i%200+1)
		s := server("id-"+name, name, openstack.StatusActive, ip, "")
		cloud.byID["openstack:///id-"+name] = &s
		nodeObjs = append(nodeObjs, node(name, "openstack:///id-"+name))
		objs = append(objs, makeCSR(b, csrSpec{name: "csr-" + name, node: name, ips: []string{ip}, dns: []string{name}}))
	}
	for b.Loop() {
		cloud.calls = 0
		client := fake.NewClientset()
		for _, n := range nodeObjs {
			if _, err := client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		c, err := NewController(client, cloud, Options{Policy: testPolicy, CloudQPS: 0, Workers: 8, Recorder: record.NewFakeRecorder(4 * nodes)})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		var mu sync.Mutex
		var latencies []time.Duration
		created := map[string]time.Time{}
		approved := map[string]bool{}
		client.PrependReactor("update", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() == "approval" {
				csr := a.(k8stesting.UpdateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
				if c := condition(csr); c == nil || c.Type != certificatesv1.CertificateApproved {
					b.Errorf("CSR %s not approved: %+v", csr.Name, csr.Status.Conditions)
				}
				mu.Lock()
				if _, dup := approved[csr.Name]; dup {
					b.Errorf("CSR %s approved twice", csr.Name)
				}
				approved[csr.Name] = true
				latencies = append(latencies, time.Since(created[csr.Name]))
				mu.Unlock()
			}
			return false, nil, nil
		})
		start := time.Now()
		for _, csr := range objs {
			mu.Lock()
			created[csr.Name] = time.Now()
			mu.Unlock()
			if _, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			return len(latencies) == nodes, nil
		})
		if err != nil {
			b.Fatalf("only %d of %d approved: %v", len(latencies), nodes, err)
		}
		elapsed := time.Since(start)
		cancel()
		<-done
		slices.Sort(latencies)
		b.ReportMetric(float64(nodes)/elapsed.Seconds(), "approvals/s")
		b.ReportMetric(latencies[len(latencies)/2].Seconds()*1000, "p50-ms")
		b.ReportMetric(latencies[len(latencies)*99/100].Seconds()*1000, "p99-ms")
		b.ReportMetric(float64(cloud.calls)/nodes, "cloud-calls/approval")
	}
}
