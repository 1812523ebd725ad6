package approver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/internal/cloudsim"
)

// TestCloudOutageDuringABurst: Nova fails while 200 nodes ask for serving
// certificates. Every request stays pending through the outage; after it
// every one is approved within 30 s, exactly once, and the audit trail is
// a few Events rather than one per request and retry.
func TestCloudOutageDuringABurst(t *testing.T) {
	const nodes = 200
	seed := cloudsim.DefaultSeed()
	seed.Servers = nil
	for i := range nodes {
		seed.Servers = append(seed.Servers, cloudsim.ServerSpec{Name: fmt.Sprintf("burst-%03d", i), Flavor: "m1.small",
			NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: fmt.Sprintf("10.0.0.%d", i+10)}}})
	}
	sim, err := cloudsim.New(cloudsim.Options{Seed: seed, RandSeed: 1, Latency: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	authURL, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ids := map[string]string{}
	for _, s := range sim.Servers() {
		ids[s.Name] = s.ID
	}
	conf := filepath.Join(t.TempDir(), "cloud.conf")
	if err := os.WriteFile(conf, []byte("[Global]\nauth-url="+authURL+"\nusername=demo\npassword=secret\ndomain-name=Default\ntenant-name=demo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	var csrs []*certificatesv1.CertificateSigningRequest
	for i := range nodes {
		name := fmt.Sprintf("burst-%03d", i)
		objs = append(objs, node(name, "openstack:///"+ids[name]))
		csrs = append(csrs, makeCSR(t, csrSpec{name: "csr-" + name, node: name, ips: []string{fmt.Sprintf("10.0.0.%d", i+10)}, dns: []string{name}}))
	}
	client := fake.NewClientset(objs...)
	var mu sync.Mutex
	approvals := map[string]int{}
	client.PrependReactor("update", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "approval" {
			mu.Lock()
			approvals[a.(k8stesting.UpdateAction).GetObject().(*certificatesv1.CertificateSigningRequest).Name]++
			mu.Unlock()
		}
		return false, nil, nil
	})

	// The process path with its defaults (retry backoff, coalescing,
	// Event folding), logging quietly: 200 requests retry for a while.
	cfg := Config{CloudConfig: conf, MetricsBindAddress: "0"}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().V(9)))
	done := make(chan error, 1)
	if err := sim.SetFault(cloudsim.FaultRule{Service: "compute", Status: 503}); err != nil {
		t.Fatal(err)
	}
	go func() { done <- runWithClient(ctx, cfg, client, nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	for _, csr := range csrs {
		if _, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Through five seconds of outage nothing is decided.
	outage := time.Now()
	for time.Since(outage) < 5*time.Second {
		mu.Lock()
		n := len(approvals)
		mu.Unlock()
		if n != 0 {
			t.Fatalf("%d requests decided during the cloud outage", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	list, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		if !isPending(&c) {
			t.Fatalf("CSR %s decided during the outage: %+v", c.Name, c.Status.Conditions)
		}
	}

	sim.ClearFaults()
	recovered := time.Now()
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(approvals) == nodes, nil
	})
	mu.Lock()
	t.Logf("%d of %d approved %s after the recovery", len(approvals), nodes, time.Since(recovered))
	for name, n := range approvals {
		if n != 1 {
			t.Errorf("%s approved %d times", name, n)
		}
	}
	mu.Unlock()
	if err != nil {
		t.Fatalf("not all requests approved within 30 s of the recovery: %v", err)
	}
	list, err = client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		if cond := condition(&c); cond == nil || cond.Type != certificatesv1.CertificateApproved {
			t.Errorf("CSR %s: %+v, want Approved", c.Name, cond)
		}
	}
	events, err := client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byReason := map[string]int{}
	for _, e := range events.Items {
		byReason[e.Type+"/"+e.Reason]++
	}
	t.Logf("Events for %d requests through an outage: %v", nodes, byReason)
	if len(events.Items) > 10 {
		t.Errorf("%d Events for %d requests (%v); want a few, not one per request or retry", len(events.Items), nodes, byReason)
	}
	if byReason[corev1.EventTypeWarning+"/"+reasonCouldNotCheck] == 0 || byReason[corev1.EventTypeNormal+"/"+ReasonVerified] == 0 {
		t.Errorf("Events %v; want the outage and the approvals recorded", byReason)
	}
	calls := sim.Calls()
	t.Logf("cloud calls: %v", calls)
}
