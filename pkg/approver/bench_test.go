package approver

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
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

// slowCompute is Nova answering after a fixed latency, like across a
// network, counting its calls; the approver's real lookups
// (NewOpenStackCloud) run over it.
type slowCompute struct {
	latency time.Duration
	mu      sync.Mutex
	byID    map[string]*openstack.Server
	calls   int
}

// slowOwnership is Neutron for slowCompute's servers (derivedView), with
// the same latency, counted in the same calls.
type slowOwnership struct{ c *slowCompute }

func (o slowOwnership) views(ctx context.Context) ([]nodeaddress.CloudView, error) {
	if err := o.c.wait(ctx); err != nil {
		return nil, err
	}
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	out := make([]nodeaddress.CloudView, 0, len(o.c.byID))
	for _, s := range o.c.byID {
		out = append(out, derivedView(s))
	}
	return out, nil
}

func (o slowOwnership) ServerPorts(ctx context.Context, serverID, _ string) ([]openstack.Port, error) {
	if err := o.c.wait(ctx); err != nil {
		return nil, err
	}
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	if s := o.c.byID[serverID]; s != nil {
		return derivedView(s).Ports, nil
	}
	return nil, nil
}

func (o slowOwnership) FloatingIPsOfPorts(ctx context.Context, portIDs []string) ([]openstack.FloatingIP, error) {
	all, err := o.allFloatingIPs(ctx)
	var out []openstack.FloatingIP
	for _, f := range all {
		if slices.Contains(portIDs, f.PortID) {
			out = append(out, f)
		}
	}
	return out, err
}

func (o slowOwnership) Networks(ctx context.Context, ids []string) ([]openstack.NetworkInfo, error) {
	if err := o.c.wait(ctx); err != nil {
		return nil, err
	}
	var out []openstack.NetworkInfo
	for _, id := range ids {
		out = append(out, openstack.NetworkInfo{ID: id, Name: strings.TrimPrefix(id, "net-"), ProjectID: testProject})
	}
	return out, nil
}

func (o slowOwnership) PortsOfServers(ctx context.Context, serverIDs []string, _ string) ([]openstack.Port, error) {
	views, err := o.views(ctx)
	var out []openstack.Port
	for _, v := range views {
		if slices.Contains(serverIDs, v.Server.ID) {
			out = append(out, v.Ports...)
		}
	}
	return out, err
}

func (o slowOwnership) allFloatingIPs(ctx context.Context) ([]openstack.FloatingIP, error) {
	views, err := o.views(ctx)
	var out []openstack.FloatingIP
	for _, v := range views {
		out = append(out, v.FloatingIPs...)
	}
	return out, err
}

func (c *slowCompute) wait(ctx context.Context) error {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	select {
	case <-time.After(c.latency):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *slowCompute) GetServer(ctx context.Context, id string) (*openstack.Server, error) {
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.byID[id]; s != nil {
		cp := *s
		return &cp, nil
	}
	return nil, openstack.ErrNotFound
}

func (c *slowCompute) ListServers(ctx context.Context, opts openstack.ListServersOpts) ([]openstack.Server, error) {
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	re, err := regexp.Compile(opts.Name)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]openstack.Server, 0, len(c.byID))
	for _, s := range c.byID {
		if re.MatchString(s.Name) {
			out = append(out, *s)
		}
	}
	return out, nil
}

// BenchmarkJoinBurst: 1,000 nodes ask for serving certificates at once, the
// cloud answers in 20 ms, the approver runs with its default options. Reports approvals per second, the latency from
// creation to approval (p50, p99) and cloud calls per approval. The
// apiserver is client-go's fake: this measures the approver, not etcd.
func BenchmarkJoinBurst(b *testing.B) {
	const nodes = 1000
	compute := &slowCompute{latency: 20 * time.Millisecond, byID: map[string]*openstack.Server{}}
	var objs []*certificatesv1.CertificateSigningRequest
	var nodeObjs []*corev1.Node
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		ip := fmt.Sprintf("10.1.%d.%d", i/200, i%200+1)
		s := server("id-"+name, name, openstack.StatusActive, ip, "")
		compute.byID["id-"+name] = &s
		nodeObjs = append(nodeObjs, node(name, "openstack:///id-"+name))
		objs = append(objs, makeCSR(b, csrSpec{name: "csr-" + name, node: name, ips: []string{ip}, dns: []string{name}}))
	}
	for b.Loop() {
		compute.calls = 0
		client := fake.NewClientset()
		for _, n := range nodeObjs {
			if _, err := client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		ownership := openstack.CachedNetworks(slowOwnership{compute}, time.Minute)
		cloud := NewOpenStackCloud(compute, ownership, "", testProject, CloudOptions{QPS: DefaultCloudQPS, Burst: DefaultCloudBurst})
		c, err := NewController(client, cloud, Options{Policy: testPolicy, Recorder: record.NewFakeRecorder(4 * nodes)})
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
		b.ReportMetric(float64(compute.calls)/nodes, "cloud-calls/approval")
	}
}

// The benchmark's servers have no trunks: a Neutron without the extension.
func (o slowOwnership) TrunksOfPorts(ctx context.Context, _ []string) ([]openstack.Trunk, error) {
	if err := o.c.wait(ctx); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("list trunks: %w", openstack.ErrNoTrunkExtension)
}

func (o slowOwnership) PortsByID(ctx context.Context, ids []string) ([]openstack.Port, error) {
	views, err := o.views(ctx)
	var out []openstack.Port
	for _, v := range views {
		for _, p := range v.Ports {
			if slices.Contains(ids, p.ID) {
				out = append(out, p)
			}
		}
	}
	return out, err
}
