package approver

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2/ktesting"
)

// fastRetries keeps the outage tests short.
func fastRetries() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, 100*time.Millisecond)
}

// withNodesFor adds a registered Node (no provider ID yet) for every
// requestor of a CSR in objs that has none there, as kubelets register
// theirs before asking.
func withNodesFor(objs ...runtime.Object) []runtime.Object {
	have := map[string]bool{}
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			have[n.Name] = true
		}
	}
	out := slices.Clone(objs)
	for _, o := range objs {
		csr, ok := o.(*certificatesv1.CertificateSigningRequest)
		if !ok {
			continue
		}
		if name, ok := strings.CutPrefix(csr.Spec.Username, nodeUserPrefix); ok && !have[name] {
			have[name] = true
			out = append(out, node(name, ""))
		}
	}
	return out
}

// startController runs a controller on a fake clientset holding objs until
// the test ends.
func startController(t *testing.T, cloud Cloud, opts Options, objs ...runtime.Object) (kubernetes.Interface, *prometheus.Registry) {
	t.Helper()
	client := fake.NewClientset(withNodesFor(objs...)...)
	return client, startControllerOn(t, client, cloud, opts)
}

// startControllerOn runs a controller on client until the test ends.
func startControllerOn(t *testing.T, client kubernetes.Interface, cloud Cloud, opts Options) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts.Registerer = reg
	if opts.RateLimiter == nil {
		opts.RateLimiter = fastRetries()
	}
	if opts.EventWindow == 0 {
		opts.EventWindow = 200 * time.Millisecond
	}
	c, err := NewController(client, cloud, opts)
	if err != nil {
		t.Fatalf("NewController: %v", err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return reg
}

func condition(csr *certificatesv1.CertificateSigningRequest) *certificatesv1.CertificateSigningRequestCondition {
	for i := range csr.Status.Conditions {
		return &csr.Status.Conditions[i]
	}
	return nil
}

// waitCondition waits for the CSR's first condition and returns it.
func waitCondition(t *testing.T, client kubernetes.Interface, name string) certificatesv1.CertificateSigningRequestCondition {
	t.Helper()
	var got *certificatesv1.CertificateSigningRequestCondition
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		csr, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = condition(csr)
		return got != nil, nil
	})
	if err != nil {
		t.Fatalf("CSR %s got no condition: %v", name, err)
	}
	return *got
}

// waitEvent waits for an Event about the CSR with that reason.
func waitEvent(t *testing.T, client kubernetes.Interface, csrName, reason string) corev1.Event {
	t.Helper()
	var found corev1.Event
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == csrName && e.InvolvedObject.Kind == "CertificateSigningRequest" && e.Reason == reason {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no Event %s on CSR %s: %v", reason, csrName, err)
	}
	return found
}

// metricValue sums the samples of a metric family whose labels include want.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue metric
				}
			}
			if m.GetCounter() != nil {
				sum += m.GetCounter().GetValue()
			} else if m.GetHistogram() != nil {
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

func TestControllerApprovesDeniesAndRecords(t *testing.T) {
	good := makeCSR(t, csrSpec{name: "good", node: "node-a", ips: []string{"10.0.0.10"}, dns: []string{"node-a"}})
	stolenIP := makeCSR(t, csrSpec{name: "stolen-ip", node: "node-a", ips: []string{"10.0.0.11"}})
	early := makeCSR(t, csrSpec{name: "early-join", node: "kubernetes-worker-1", ips: []string{"10.0.0.18"}}) // a Node without provider ID
	other := makeCSR(t, csrSpec{name: "client", node: "node-a", signer: certificatesv1.KubeAPIServerClientKubeletSignerName, ips: []string{"10.0.0.11"}})
	decided := makeCSR(t, csrSpec{name: "decided", node: "node-a", ips: []string{"10.0.0.11"}})
	decided.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "SomeoneElse"}}

	client, reg := startController(t, testCloud(), Options{Policy: testPolicy},
		node("node-a", "openstack:///id-a"), good, stolenIP, early, other, decided)

	if c := waitCondition(t, client, "good"); c.Type != certificatesv1.CertificateApproved || c.Reason != ReasonVerified || !strings.Contains(c.Message, "id-a") {
		t.Errorf("good: condition %+v, want Approved/%s naming the instance id", c, ReasonVerified)
	}
	if c := waitCondition(t, client, "stolen-ip"); c.Type != certificatesv1.CertificateDenied || c.Reason != ReasonIPNotOfInstance ||
		!strings.Contains(c.Message, "10.0.0.11") || !strings.Contains(c.Message, "10.0.0.10") {
		t.Errorf("stolen-ip: condition %+v, want Denied/%s naming the SAN and the cloud's addresses", c, ReasonIPNotOfInstance)
	}
	if c := waitCondition(t, client, "early-join"); c.Type != certificatesv1.CertificateApproved {
		t.Errorf("early-join: condition %+v, want Approved (found by name before the CCM initialized the Node)", c)
	}
	if e := waitEvent(t, client, "good", ReasonVerified); e.Type != corev1.EventTypeNormal || !strings.Contains(e.Message, "Approved") {
		t.Errorf("approval event %s %q", e.Type, e.Message)
	}
	if e := waitEvent(t, client, "stolen-ip", ReasonIPNotOfInstance); e.Type != corev1.EventTypeWarning || !strings.Contains(e.Message, "10.0.0.11") {
		t.Errorf("denial event %s %q", e.Type, e.Message)
	}

	for name, want := range map[string]string{"client": "", "decided": "SomeoneElse"} {
		csr, err := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if c := condition(csr); c != nil {
			got = c.Reason
		}
		if got != want || len(csr.Status.Conditions) > 1 {
			t.Errorf("%s was touched: conditions %+v", name, csr.Status.Conditions)
		}
	}
	if got := metricValue(t, reg, "stackward_csr_decisions_total", map[string]string{"decision": "approved", "reason": ReasonVerified}); got != 2 {
		t.Errorf("approved counter = %v, want 2", got)
	}
	if got := metricValue(t, reg, "stackward_csr_decisions_total", map[string]string{"decision": "denied", "reason": ReasonIPNotOfInstance}); got != 1 {
		t.Errorf("denied counter = %v, want 1", got)
	}
	if got := metricValue(t, reg, "stackward_csr_decision_duration_seconds", nil); got != 3 {
		t.Errorf("duration observations = %v, want 3", got)
	}
}

func TestCloudOutageLeavesPendingThenApproves(t *testing.T) {
	cloud := testCloud()
	cloud.setErr(errors.New("nova: 503 service unavailable"))
	csr := makeCSR(t, csrSpec{name: "during-outage", node: "node-a", ips: []string{"10.0.0.10"}})
	client, reg := startController(t, cloud, Options{Policy: testPolicy}, csr)

	e := waitEvent(t, client, "during-outage", reasonCouldNotCheck)
	if !strings.Contains(e.Message, "503") {
		t.Errorf("outage event %q does not say why", e.Message)
	}
	got, err := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "during-outage", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 0 {
		t.Fatalf("a cloud outage decided the CSR: %+v", got.Status.Conditions)
	}
	cloud.setErr(nil)
	if c := waitCondition(t, client, "during-outage"); c.Type != certificatesv1.CertificateApproved {
		t.Fatalf("after recovery: %+v, want Approved", c)
	}
	if n := metricValue(t, reg, "stackward_csr_decisions_total", map[string]string{"decision": "requeued"}); n < 1 {
		t.Errorf("requeued counter = %v, want >= 1", n)
	}
	if n := metricValue(t, reg, "stackward_csr_decisions_total", map[string]string{"decision": "denied"}); n != 0 {
		t.Errorf("denied counter = %v during an outage", n)
	}
}

func TestLeavePendingOnDenyOnlyRecords(t *testing.T) {
	csr := makeCSR(t, csrSpec{name: "would-deny", node: "node-a", ips: []string{"198.18.0.11"}})
	client, reg := startController(t, testCloud(), Options{Policy: testPolicy, LeavePendingOnDeny: true}, csr)
	e := waitEvent(t, client, "would-deny", ReasonIPNotOfInstance)
	if !strings.Contains(e.Message, "Would deny") {
		t.Errorf("event %q", e.Message)
	}
	got, err := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "would-deny", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 0 {
		t.Errorf("left-pending CSR got conditions %+v", got.Status.Conditions)
	}
	if n := metricValue(t, reg, "stackward_csr_decisions_total", map[string]string{"decision": "left_pending", "reason": ReasonIPNotOfInstance}); n != 1 {
		t.Errorf("left_pending counter = %v, want 1", n)
	}
}

func TestPendingPerNodeCapDecidesOldestFirst(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := makeCSR(t, csrSpec{name: "old", node: "node-a", ips: []string{"10.0.0.10"}, created: base})
	newer := makeCSR(t, csrSpec{name: "newer", node: "node-a", ips: []string{"10.0.0.10"}, created: base.Add(time.Minute)})
	client := fake.NewClientset(withNodesFor(old, newer)...)
	reg := prometheus.NewRegistry()
	rec := record.NewFakeRecorder(10)
	c, err := NewController(client, testCloud(), Options{Policy: testPolicy, MaxPendingPerNode: 1, Registerer: reg, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.csrFactory.Start(ctx.Done())
	c.nodeFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		t.Fatal("caches did not sync")
	}
	if err := c.sync(ctx, "newer"); err != nil {
		t.Fatal(err)
	}
	if n := metricValue(t, reg, "stackward_csr_decisions_total", map[string]string{"decision": "deferred"}); n != 1 {
		t.Errorf("deferred counter = %v, want 1", n)
	}
	for _, a := range client.Actions() {
		if a.GetSubresource() == "approval" {
			t.Fatalf("the newer CSR over the cap was decided: %v", a)
		}
	}
	if err := c.sync(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	if got, _ := client.CertificatesV1().CertificateSigningRequests().Get(ctx, "old", metav1.GetOptions{}); condition(got) == nil || condition(got).Type != certificatesv1.CertificateApproved {
		t.Errorf("oldest CSR not approved: %+v", got.Status.Conditions)
	}
}

func TestNewControllerRejectsASharedRegistererTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	client := fake.NewClientset()
	if _, err := NewController(client, testCloud(), Options{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewController(client, testCloud(), Options{Registerer: reg}); err == nil {
		t.Error("second controller on the same registerer: no error")
	}
}

func TestAFailedApprovalUpdateIsRetried(t *testing.T) {
	csr := makeCSR(t, csrSpec{name: "conflicted", node: "node-a", ips: []string{"10.0.0.10"}})
	client := fake.NewClientset(withNodesFor(csr)...)
	failures := 2
	client.PrependReactor("update", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "approval" && failures > 0 {
			failures--
			return true, nil, apierrors.NewConflict(certificatesv1.Resource("certificatesigningrequests"), "conflicted", errors.New("changed"))
		}
		return false, nil, nil
	})
	reg := prometheus.NewRegistry()
	c, err := NewController(client, testCloud(), Options{Policy: testPolicy, Registerer: reg, RateLimiter: fastRetries(), Recorder: record.NewFakeRecorder(10)})
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if got := waitCondition(t, client, "conflicted"); got.Type != certificatesv1.CertificateApproved {
		t.Fatalf("condition %+v", got)
	}
	if n := metricValue(t, reg, "stackward_csr_decisions_total", map[string]string{"decision": "requeued", "reason": reasonUpdateFailed}); n != 2 {
		t.Errorf("requeued/%s = %v, want 2", reasonUpdateFailed, n)
	}
}

func TestLeftPendingRequestsDoNotHoldNewerOnesBack(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	bad := makeCSR(t, csrSpec{name: "old-bad", node: "node-a", ips: []string{"10.0.0.11"}, created: base})
	good := makeCSR(t, csrSpec{name: "new-good", node: "node-a", ips: []string{"10.0.0.10"}, created: base.Add(time.Minute)})
	client, _ := startController(t, testCloud(), Options{Policy: testPolicy, LeavePendingOnDeny: true, MaxPendingPerNode: 1}, bad, good)
	if c := waitCondition(t, client, "new-good"); c.Type != certificatesv1.CertificateApproved {
		t.Fatalf("new-good: %+v", c)
	}
	got, err := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "old-bad", metav1.GetOptions{})
	if err != nil || len(got.Status.Conditions) != 0 {
		t.Errorf("old-bad: %+v, %v; want left pending", got.Status.Conditions, err)
	}
}
