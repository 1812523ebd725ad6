package approver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// TestARequestWaitsForItsNodeAndIsDecidedWhenItRegisters: a serving
// request with no Node (a bootstrap token's holder naming a project server,
// or a kubelet whose registration is late) stays pending with one Event;
// the Node's registration, not a periodic recheck, brings the decision.
func TestARequestWaitsForItsNodeAndIsDecidedWhenItRegisters(t *testing.T) {
	csr := makeCSR(t, csrSpec{name: "nodeless", node: "node-a", ips: []string{"10.0.0.10"}})
	client := fake.NewClientset(csr)
	startControllerOn(t, client, testCloud(), Options{Policy: testPolicy, WaitRecheck: time.Hour})

	if e := waitEvent(t, client, "nodeless", ReasonNodeNotRegistered); e.Type != corev1.EventTypeWarning || !strings.Contains(e.Message, "no Node node-a exists") {
		t.Errorf("event %s %q, want a warning naming the missing Node", e.Type, e.Message)
	}
	if got, _ := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "nodeless", metav1.GetOptions{}); len(got.Status.Conditions) != 0 {
		t.Fatalf("a request with no Node was decided: %+v", got.Status.Conditions)
	}
	// The kubelet registers, uninitialized (no provider ID, the taint).
	n := node("node-a", "")
	n.Spec.Taints = []corev1.Taint{{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	if _, err := client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if c := waitCondition(t, client, "nodeless"); c.Type != certificatesv1.CertificateApproved {
		t.Fatalf("after the Node registered: %+v, want Approved", c)
	}
}

// TestAControlPlaneEndpointThatIsANodesAddressIsReportedOnce: an operator
// listed a kubeadm control-plane host's advertise address; that host's own
// requests are approved and the misconfiguration is said once, naming the
// node and the value.
func TestAControlPlaneEndpointThatIsANodesAddressIsReportedOnce(t *testing.T) {
	first := makeCSR(t, csrSpec{name: "cp-first", node: "cp-1", ips: []string{"10.0.0.2"}})
	second := makeCSR(t, csrSpec{name: "cp-second", node: "cp-1", ips: []string{"10.0.0.2"}, dns: []string{"cp-1"}})
	client, _ := startController(t, testCloud(), Options{Policy: testPolicy}, first, second)
	for _, name := range []string{"cp-first", "cp-second"} {
		if c := waitCondition(t, client, name); c.Type != certificatesv1.CertificateApproved {
			t.Fatalf("%s: %+v, want the control-plane host's own address approved", name, c)
		}
	}
	var warned []corev1.Event
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		warned = nil
		for _, e := range list.Items {
			if e.Reason == ReasonControlPlaneEndpointIsNodeAddress {
				warned = append(warned, e)
			}
		}
		return len(warned) > 0, nil
	})
	if err != nil {
		t.Fatalf("no %s Event: %v", ReasonControlPlaneEndpointIsNodeAddress, err)
	}
	time.Sleep(300 * time.Millisecond) // a second Event would have been recorded by now
	list, _ := client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	n := 0
	for _, e := range list.Items {
		if e.Reason == ReasonControlPlaneEndpointIsNodeAddress {
			n += int(max(e.Count, 1))
			if !strings.Contains(e.Message, "node cp-1") || !strings.Contains(e.Message, "10.0.0.2") {
				t.Errorf("event %q does not name the node and the value", e.Message)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d %s Events, want exactly one", n, ReasonControlPlaneEndpointIsNodeAddress)
	}
}

// TestAFloodOfOversizeRequestsCostsNoCacheAndOthersAreApproved: one node
// sends many ~1 MiB requests; the cache keeps none of their bodies (nor
// any managed fields), they are denied for their size without being parsed
// up to the node's denial budget (the rest stay pending, unwritten), and
// another node's request is approved meanwhile.
func TestAFloodOfOversizeRequestsCostsNoCacheAndOthersAreApproved(t *testing.T) {
	const flood = 40
	var objs []runtime.Object
	pad := make([]byte, 1<<20)
	for i := range flood {
		csr := makeCSR(t, csrSpec{name: "flood-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26), node: "node-b", raw: pad})
		csr.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
		objs = append(objs, csr)
	}
	objs = append(objs, makeCSR(t, csrSpec{name: "good", node: "node-a", ips: []string{"10.0.0.10"}}))
	client := fake.NewClientset(withNodesFor(objs...)...)
	c, stop := startControllerFor(t, client)
	defer stop()

	if got := waitCondition(t, client, "good"); got.Type != certificatesv1.CertificateApproved {
		t.Fatalf("the other node's request: %+v", got)
	}
	denied := 0
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		denied = 0
		list, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, csr := range list.Items {
			if c := condition(&csr); c != nil && csr.Spec.Username == "system:node:node-b" {
				if c.Type != certificatesv1.CertificateDenied || c.Reason != ReasonRequestTooLarge || !strings.Contains(c.Message, "1048576 bytes") {
					t.Fatalf("%s: %+v, want Denied/%s naming its size", csr.Name, c, ReasonRequestTooLarge)
				}
				denied++
			}
		}
		return denied == DefaultMaxDenialsPerNode, nil
	})
	if err != nil {
		t.Fatalf("the flood's first %d requests were not denied (%d were): %v", DefaultMaxDenialsPerNode, denied, err)
	}
	time.Sleep(200 * time.Millisecond) // more denials would be written by now
	list, _ := client.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	pending := 0
	for _, csr := range list.Items {
		if len(csr.Status.Conditions) == 0 {
			pending++
		}
	}
	if pending != flood-DefaultMaxDenialsPerNode {
		t.Errorf("%d of the flood pending, want %d: beyond its denial budget a node's requests are not written", pending, flood-DefaultMaxDenialsPerNode)
	}
	held := 0
	for _, o := range c.csrInformer.GetIndexer().List() {
		csr := o.(*certificatesv1.CertificateSigningRequest)
		held += len(csr.Spec.Request)
		if len(csr.ManagedFields) > 0 {
			t.Errorf("the cache keeps the managed fields of %s", csr.Name)
		}
	}
	// None of the flood's bodies, pending or decided, is held.
	if held > 0 {
		t.Errorf("the cache holds %d bytes of request bodies; want none (all decided or oversize)", held)
	}
}

// TestPaddedMetadataCostsNoCacheAndIsKeptOnWrite: a node files requests
// with a kubelet's small body and ~256 KiB of annotations, labels,
// finalizers and owner references each (what the apiserver admits without
// the chart's policy); the cache keeps none of that padding, the first ones
// are denied up to the node's denial budget and the rest stay pending, and
// the decisions written leave each stored request's metadata as it was.
func TestPaddedMetadataCostsNoCacheAndIsKeptOnWrite(t *testing.T) {
	const flood = 20
	labels := map[string]string{}
	for i := range 100 {
		labels[fmt.Sprintf("example.com/pad-%03d", i)] = strings.Repeat("l", 63)
	}
	var objs []runtime.Object
	for i := range flood {
		// 10.0.0.10 is node-a's: node-b's requests for it are denied.
		csr := makeCSR(t, csrSpec{name: fmt.Sprintf("padded-%02d", i), node: "node-b", ips: []string{"10.0.0.10"}})
		csr.UID = types.UID(fmt.Sprintf("uid-padded-%02d", i))
		csr.Annotations = map[string]string{"example.com/pad": strings.Repeat("a", 250<<10)}
		csr.Labels = labels
		csr.Finalizers = []string{"example.com/hold-1", "example.com/hold-2"}
		csr.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "pad", UID: "uid-pad"}}
		objs = append(objs, csr)
	}
	objs = append(objs, makeCSR(t, csrSpec{name: "good", node: "node-a", ips: []string{"10.0.0.10"}}))
	client := fake.NewClientset(withNodesFor(objs...)...)
	c, stop := startControllerFor(t, client)
	defer stop()

	if got := waitCondition(t, client, "good"); got.Type != certificatesv1.CertificateApproved {
		t.Fatalf("the other node's request: %+v", got)
	}
	var denied []certificatesv1.CertificateSigningRequest
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		denied = nil
		for _, csr := range list.Items {
			if c := condition(&csr); c != nil && csr.Spec.Username == "system:node:node-b" {
				if c.Type != certificatesv1.CertificateDenied {
					t.Fatalf("%s: %+v, want Denied", csr.Name, c)
				}
				denied = append(denied, csr)
			}
		}
		return len(denied) == DefaultMaxDenialsPerNode, nil
	})
	if err != nil {
		t.Fatalf("%d of the padded requests denied, want the budget of %d: %v", len(denied), DefaultMaxDenialsPerNode, err)
	}
	// A decision goes through the approval subresource, which stores the
	// metadata it is sent: the trimmed cache copy must not be it.
	for _, csr := range denied {
		if len(csr.Annotations["example.com/pad"]) != 250<<10 || len(csr.Labels) != len(labels) || len(csr.Finalizers) != 2 || len(csr.OwnerReferences) != 1 {
			t.Errorf("denying %s rewrote its metadata: %d annotations, %d labels, finalizers %v, owners %v",
				csr.Name, len(csr.Annotations), len(csr.Labels), csr.Finalizers, csr.OwnerReferences)
		}
	}
	held, n := 0, 0
	for _, o := range c.csrInformer.GetIndexer().List() {
		csr := o.(*certificatesv1.CertificateSigningRequest)
		if csr.Spec.Username != "system:node:node-b" {
			continue
		}
		n++
		held += csr.Size()
		if len(csr.Annotations)+len(csr.Labels)+len(csr.Finalizers)+len(csr.OwnerReferences) > 0 {
			t.Errorf("the cache keeps the metadata of %s: %d annotations, %d labels, %d finalizers, %d owners",
				csr.Name, len(csr.Annotations), len(csr.Labels), len(csr.Finalizers), len(csr.OwnerReferences))
		}
	}
	// A pending request keeps its (kubelet-sized) body; nothing else of
	// it is larger than a few hundred bytes.
	if n != flood || held > flood*2<<10 {
		t.Errorf("the cache holds %d of the %d padded requests in %d KiB; want all of them in at most %d KiB", n, flood, held>>10, flood*2)
	}
}

// TestANodeGetsNoMoreCertificatesThanItsBudget: 300 identical requests of
// one node were all approved and signed; now the node's budget is, and the
// rest wait with an Event saying why.
func TestANodeGetsNoMoreCertificatesThanItsBudget(t *testing.T) {
	var objs []runtime.Object
	for i := range 4 {
		objs = append(objs, makeCSR(t, csrSpec{name: "same-" + string(rune('a'+i)), node: "node-a", ips: []string{"10.0.0.10"}}))
	}
	client, reg := startController(t, testCloud(), Options{Policy: testPolicy, MaxIssuedPerNode: 2}, objs...)
	var approved, held []string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		approved = nil
		list, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, csr := range list.Items {
			if c := condition(&csr); c != nil && c.Type == certificatesv1.CertificateApproved {
				approved = append(approved, csr.Name)
			}
		}
		return len(approved) >= 2 && metricValue(t, reg, "stackward_csr_decisions_total", map[string]string{"decision": outcomeDeferred, "reason": reasonOverIssueBudget}) >= 2, nil
	})
	time.Sleep(200 * time.Millisecond) // a third approval would be written by now
	approved = nil
	list, _ := client.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	for _, csr := range list.Items {
		if c := condition(&csr); c != nil && c.Type == certificatesv1.CertificateApproved {
			approved = append(approved, csr.Name)
		}
	}
	if err != nil || len(approved) != 2 {
		t.Fatalf("approved %v (%v); want exactly the budget of 2 and the others deferred", approved, err)
	}
	for _, o := range objs {
		name := o.(*certificatesv1.CertificateSigningRequest).Name
		if !slices.Contains(approved, name) {
			held = append(held, name)
		}
	}
	e := waitEvent(t, client, held[0], reasonOverIssueBudget)
	if !strings.Contains(e.Message, "system:node:node-a was approved 2 certificates within 1h0m0s") {
		t.Errorf("event %q does not say the budget", e.Message)
	}
}

// startControllerFor runs a controller on client and returns it.
func startControllerFor(t *testing.T, client kubernetes.Interface) (*Controller, func()) {
	t.Helper()
	c, err := NewController(client, testCloud(), Options{Policy: testPolicy, RateLimiter: fastRetries(), MaxPendingPerNode: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return c, func() { cancel(); <-done }
}
