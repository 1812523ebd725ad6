package approver

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
)

// TestRunLeadsDecidesServesAndShutsDown runs the whole process logic on a
// fake apiserver: it takes the Lease, approves, serves health and metrics,
// and on cancel stops cleanly and gives the Lease up.
func TestRunLeadsDecidesServesAndShutsDown(t *testing.T) {
	client := fake.NewClientset(makeCSR(t, csrSpec{name: "good", node: "node-a", ips: []string{"10.0.0.10"}}), node("node-a", ""))
	cfg := Config{
		Options: Options{Policy: testPolicy, RateLimiter: fastRetries()},
		Cloud:   testCloud(),
		LeaderElection: LeaderElection{Enabled: true, Namespace: "kube-system", Identity: "test-replica",
			LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond},
		Serving: testServing(t),
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- runWithClient(ctx, cfg, client, func(a string) { addr <- a }) }()
	base := "https://" + <-addr

	if c := waitCondition(t, client, "good"); c.Type != certificatesv1.CertificateApproved {
		t.Fatalf("condition %+v, want Approved", c)
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		code, _ := getWithToken(base+"/readyz", "")
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Errorf("/readyz never became ready: %v", err)
	}
	endpoints := []struct {
		name, path, token string
		wantCode          int
		wantBody          []string
	}{
		{name: "health answers anyone (the kubelet's probe)", path: "/healthz", wantCode: http.StatusOK, wantBody: []string{"ok"}},
		{name: "metrics without credentials are forbidden", path: "/metrics", wantCode: http.StatusForbidden},
		{name: "metrics with an unknown token are unauthorized", path: "/metrics", token: "forged", wantCode: http.StatusUnauthorized},
		{name: "metrics with a token lacking get /metrics are forbidden", path: "/metrics", token: nobodyToken, wantCode: http.StatusForbidden},
		{name: "metrics with a token allowed get /metrics answer", path: "/metrics", token: scraperToken, wantCode: http.StatusOK, wantBody: []string{
			`stackward_csr_decisions_total{decision="approved",reason="StackwardVerified"} 1`,
			`stackward_build_info{component="stackward-approver"`,
			`workqueue_adds_total{name="stackward-approver"}`,
			"stackward_csr_pending 0",
		}},
	}
	for _, e := range endpoints {
		t.Run(e.name, func(t *testing.T) {
			code, body := getWithToken(base+e.path, e.token)
			if code != e.wantCode {
				t.Errorf("GET %s: %d, want %d: %s", e.path, code, e.wantCode, body)
			}
			for _, want := range e.wantBody {
				if !strings.Contains(body, want) {
					t.Errorf("GET %s does not have %q:\n%s", e.path, want, body)
				}
			}
		})
	}
	lease, err := client.CoordinationV1().Leases("kube-system").Get(ctx, DefaultLeaseName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "test-replica" {
		t.Fatalf("lease %+v, %v; want held by test-replica", lease, err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	lease, err = client.CoordinationV1().Leases("kube-system").Get(context.Background(), DefaultLeaseName, metav1.GetOptions{})
	if err != nil || (lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "") {
		t.Errorf("lease not released on shutdown: %+v, %v", lease.Spec, err)
	}
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	cfg := Config{Options: Options{
		Policy:            Policy{MaxExpiration: time.Minute, DNSSuffixes: []string{"."}},
		MaxPendingPerNode: -1, CloudQPS: 5,
	}, LeaderElection: LeaderElection{Enabled: true, LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"--cloud-config", "--max-expiration", "--max-pending-per-node", "--cloud-burst", "--dns-suffix", "renew deadline"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
}

// TestRunExitsWhenTheLeaseIsLost: another replica taking the Lease makes
// Run return an error (the process restarts), without hanging.
func TestRunExitsWhenTheLeaseIsLost(t *testing.T) {
	client := fake.NewClientset()
	// The fake does not check resourceVersions: make the old leader's
	// renewals conflict once another replica holds the Lease, as the
	// apiserver would.
	var takenOver atomic.Bool
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		lease := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		if takenOver.Load() && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity == "me" {
			return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), lease.Name, errors.New("taken over"))
		}
		return false, nil, nil
	})
	cfg := Config{
		Options: Options{Policy: testPolicy},
		Cloud:   testCloud(),
		LeaderElection: LeaderElection{Enabled: true, Namespace: "kube-system", Identity: "me",
			LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond},
		MetricsBindAddress: "0",
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runWithClient(ctx, cfg, client, nil) }()
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		lease, err := client.CoordinationV1().Leases("kube-system").Get(ctx, DefaultLeaseName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "me" {
			return false, nil
		}
		other, secs, now := "other", int32(60), metav1.NewMicroTime(time.Now())
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds = &other, &secs
		lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
		takenOver.Store(true)
		_, err = client.CoordinationV1().Leases("kube-system").Update(ctx, lease, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("never held the lease: %v", err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "lost") {
			t.Errorf("Run after losing the lease: %v, want a lost-lease error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after losing the lease")
	}
}
