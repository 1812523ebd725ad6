package approver

import (
	"context"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/pkg/openstack"
)

// An instance that cannot be running a kubelet leaves its node's request
// pending (it may be started again: never a denial); one in a transient
// state of a running instance is approved.
func TestInstanceStateDecidesWhetherToWait(t *testing.T) {
	for _, tt := range []struct {
		status  string
		verdict Verdict
	}{
		{"SHUTOFF", Wait}, {"SUSPENDED", Wait}, {"PAUSED", Wait}, {"SHELVED", Wait}, {"SHELVED_OFFLOADED", Wait}, {"ERROR", Wait},
		{"ACTIVE", Approve}, {"REBOOT", Approve}, {"HARD_REBOOT", Approve}, {"MIGRATING", Approve}, {"RESIZE", Approve}, {"VERIFY_RESIZE", Approve},
	} {
		t.Run(tt.status, func(t *testing.T) {
			cloud := &fakeCloud{servers: []openstack.Server{server("id-s", "node-s", tt.status, "10.0.0.40", "")}}
			e := NewEvaluator(cloud, registered, nil, testPolicy)
			d, err := e.Evaluate(context.Background(), makeCSR(t, csrSpec{node: "node-s", ips: []string{"10.0.0.40"}}))
			if err != nil || d.Verdict != tt.verdict {
				t.Fatalf("got %s/%s (%s), %v; want %s", d.Verdict, d.Reason, d.Message, err, tt.verdict)
			}
			if tt.verdict == Wait && (d.Reason != ReasonInstanceNotRunning || !strings.Contains(d.Message, "status "+tt.status)) {
				t.Errorf("wait reason %s %q does not name the state %s", d.Reason, d.Message, tt.status)
			}
		})
	}
}

func TestAShutOffInstancesRequestWaitsWithOneEventAndIsApprovedOnceStarted(t *testing.T) {
	cloud := &fakeCloud{servers: []openstack.Server{server("id-s", "node-s", openstack.StatusShutoff, "10.0.0.40", "")}}
	csr := makeCSR(t, csrSpec{name: "waits", node: "node-s", ips: []string{"10.0.0.40"}})
	client, _ := startController(t, cloud, Options{Policy: testPolicy, WaitRecheck: 50 * time.Millisecond}, csr)

	e := waitEvent(t, client, "waits", ReasonInstanceNotRunning)
	if e.Type != corev1.EventTypeWarning || !strings.Contains(e.Message, "SHUTOFF") {
		t.Errorf("event %s %q, want a warning naming SHUTOFF", e.Type, e.Message)
	}
	// Several rechecks, each asking the cloud again.
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		cloud.mu.Lock()
		defer cloud.mu.Unlock()
		return len(cloud.calls) >= 4, nil
	})
	if err != nil {
		t.Fatalf("the request was not rechecked: %v", err)
	}
	var got *certificatesv1.CertificateSigningRequest
	got, err = client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "waits", metav1.GetOptions{})
	if err != nil || len(got.Status.Conditions) != 0 {
		t.Fatalf("while shut off: %+v, %v; want pending", got.Status.Conditions, err)
	}
	events, err := client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range events.Items {
		if ev.Reason == ReasonInstanceNotRunning && ev.InvolvedObject.Name == "waits" {
			n += max(int(ev.Count), 1)
		}
	}
	if n != 1 {
		t.Errorf("%d InstanceNotRunning events after several rechecks, want 1", n)
	}

	cloud.mu.Lock()
	cloud.servers[0].Status = openstack.StatusActive
	cloud.mu.Unlock()
	if c := waitCondition(t, client, "waits"); c.Type != certificatesv1.CertificateApproved {
		t.Fatalf("after start: %+v, want Approved", c)
	}
}
