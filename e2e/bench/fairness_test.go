//go:build e2e && bench

package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/certificate/csr"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/approver"
)

const (
	floodCSRs      = 20000
	fairnessJoins  = 100
	floodSenders   = 32
	floodLabel     = "stackward.bench/flood"
	fairnessTarget = 1.5 // the joining nodes' p99 beside the flood, over their p99 alone
)

// TestBenchFloodFairness measures what one node's flood costs the others:
// 100 nodes join (one serving CSR each, created→approved on a real
// apiserver, 20 ms cloud latency, stackward-approver at its default
// flags) once on a quiet approver and once beside 20,000 pending requests
// of one node that the approver has already seen (approved up to the
// node's certificate budget, the rest held back by the per-node cap).
// The report gives both runs' p50/p99 and their ratios; the target is a
// p99 ratio within 1.5.
func TestBenchFloodFairness(t *testing.T) {
	alone := runFairness(t, "fair-q-", 0)
	flooded := runFairness(t, "fair-f-", floodCSRs)
	a, f := alone["created_to_approved"].(Latencies), flooded["created_to_approved"].(Latencies)
	results := map[string]any{
		"joining_nodes":    fairnessJoins,
		"flood_csrs":       floodCSRs,
		"cloud_latency_ms": cloudLatency.Milliseconds(),
		"without_flood":    alone,
		"with_flood":       flooded,
		"p50_ratio":        f.P50ms / a.P50ms,
		"p99_ratio":        f.P99ms / a.P99ms,
		"p99_ratio_target": fairnessTarget,
	}
	put(t, "flood_fairness_20000_csrs", results)
}

// runFairness has fairnessJoins nodes join beside flood pending requests
// of one more node and returns the figures of that run.
func runFairness(t *testing.T, prefix string, flood int) map[string]any {
	cp := framework.SharedControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cloud := framework.StartCloud(t, framework.CloudOptions{Latency: cloudLatency})
	n := fairnessJoins + 1 // the last is the flooding node
	for i := 1; i <= n; i++ {
		cloud.CreateServer(t, fmt.Sprintf("%s%04d", prefix, i), i, "m1.small", "az-1")
	}
	registerNodes(ctx, t, cp.Admin, prefix, n)
	defer parallel(t, n, 20, func(i int) error {
		return cp.Admin.CoreV1().Nodes().Delete(context.Background(), fmt.Sprintf("%s%04d", prefix, i), metav1.DeleteOptions{})
	})
	ids, err := newNodeIdentity(cp)
	if err != nil {
		t.Fatal(err)
	}
	clients := make([]kubernetes.Interface, n+1)
	keys := make([]*ecdsa.PrivateKey, n+1)
	requests := make([][]byte, n+1)
	parallel(t, n, 4, func(i int) error {
		name := fmt.Sprintf("%s%04d", prefix, i)
		rc, err := ids.config(name)
		if err != nil {
			return err
		}
		rc.QPS, rc.Burst = 1000, 1000 // the flood is as fast as the apiserver takes it
		if clients[i], err = kubernetes.NewForConfig(rc); err != nil {
			return err
		}
		if keys[i], err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return err
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
			Subject:     pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}},
			DNSNames:    []string{name},
			IPAddresses: []net.IP{net.ParseIP(framework.NodeIP(i))},
		}, keys[i])
		if err != nil {
			return err
		}
		requests[i] = pemCSR(der)
		_, err = clients[i].Discovery().ServerVersion()
		return err
	})
	reg, stop := stackwardDefaults().start(ctx, t, cp, cloud)
	defer stop()

	flooder := "system:node:" + fmt.Sprintf("%s%04d", prefix, n)
	floodStart := time.Now()
	if flood > 0 {
		defer func() {
			err := cp.Admin.CertificatesV1().CertificateSigningRequests().DeleteCollection(context.Background(), metav1.DeleteOptions{},
				metav1.ListOptions{LabelSelector: floodLabel + "=" + strings.TrimSuffix(prefix, "-")})
			if err != nil {
				t.Errorf("delete the flood: %v", err)
			}
		}()
		parallel(t, flood, floodSenders, func(i int) error {
			_, err := clients[n].CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%sflood-%05d", prefix, i), Labels: map[string]string{floodLabel: strings.TrimSuffix(prefix, "-")}},
				Spec: certificatesv1.CertificateSigningRequestSpec{
					Request: requests[n], SignerName: certificatesv1.KubeletServingSignerName,
					Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
				},
			}, metav1.CreateOptions{})
			return err
		})
		// The approver has looked at every request of the flood (each
		// approved, or held back by the cap or the budget) before the
		// others join: the flood is there, not still arriving.
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Minute, true, func(context.Context) (bool, error) {
			return gatherSum(t, reg, "stackward_csr_decisions_total") >= float64(flood), nil
		})
		if err != nil {
			t.Fatalf("the approver looked at %.0f of the %d requests of the flood: %v", gatherSum(t, reg, "stackward_csr_decisions_total"), flood, err)
		}
	}
	floodSeen := time.Since(floodStart)
	decisionsBefore := gatherSum(t, reg, "stackward_csr_decisions_total")

	var mu sync.Mutex
	approvedAt := map[string]time.Time{}
	floodApproved := 0
	see := func(obj any) {
		c, ok := obj.(*certificatesv1.CertificateSigningRequest)
		if !ok || framework.Condition(c, certificatesv1.CertificateApproved) == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, seen := approvedAt[c.Name]; seen {
			return
		}
		approvedAt[c.Name] = time.Now()
		if c.Spec.Username == flooder {
			floodApproved++
		}
	}
	f := informers.NewSharedInformerFactory(cp.Admin, 0)
	watchCtx, stopWatching := context.WithCancel(ctx)
	if _, err := f.Certificates().V1().CertificateSigningRequests().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: see, UpdateFunc: func(_, obj any) { see(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	f.Start(watchCtx.Done())
	defer f.Shutdown()
	defer stopWatching()
	f.WaitForCacheSync(watchCtx.Done())

	var created sync.Map
	parallel(t, fairnessJoins, burstSenders, func(i int) error {
		begin := time.Now()
		reqName, _, err := csr.RequestCertificateWithContext(ctx, clients[i], requests[i], "", certificatesv1.KubeletServingSignerName, nil,
			[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}, keys[i])
		if err != nil {
			return err
		}
		created.Store(reqName, begin)
		return nil
	})
	var latencies []time.Duration
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		latencies = latencies[:0]
		created.Range(func(name, begin any) bool {
			if at, ok := approvedAt[name.(string)]; ok {
				latencies = append(latencies, at.Sub(begin.(time.Time)))
			}
			return true
		})
		return len(latencies) == fairnessJoins, nil
	})
	if err != nil {
		t.Fatalf("%d of %d joining nodes approved: %v", len(latencies), fairnessJoins, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if flood > 0 && floodApproved > approver.DefaultMaxIssuedPerNode {
		t.Errorf("the flooding node was approved %d certificates, over its budget of %d", floodApproved, approver.DefaultMaxIssuedPerNode)
	}
	return map[string]any{
		"created_to_approved":             Summarize(latencies),
		"flood_approved":                  floodApproved,
		"seconds_until_flood_looked_at":   floodSeen.Seconds(),
		"decisions_during_the_join":       gatherSum(t, reg, "stackward_csr_decisions_total") - decisionsBefore,
		"approver_decisions_before_joins": decisionsBefore,
	}
}
