package loadbalancer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRecheckIsSoonThenLessOften(t *testing.T) {
	for _, tc := range []struct{ waited, want time.Duration }{
		{0, firstRecheck},
		{500 * time.Millisecond, firstRecheck},
		{3 * time.Second, time.Second},
		{9 * time.Second, 3 * time.Second},
		{time.Minute, DefaultRequeue},
	} {
		if got := recheckAfter(tc.waited, DefaultRequeue); got != tc.want {
			t.Errorf("after waiting %s: recheck in %s, want %s", tc.waited, got, tc.want)
		}
	}
}

// A waiting Service answered from the shared view makes no call of its
// own; when the view cannot be read it syncs in full, and a failing
// lookup there is an error: never "no load balancer", which would make a
// second one.
func TestWaitingServiceFailsClosedWhenTheViewCannotBeRead(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	oct.settle = "PENDING_CREATE"
	m := newManager(oct, net) // the rechecks below are the service controller's
	svc := service()
	svc.UID = "uid-web"
	ctx := context.Background()
	if _, err := m.Ensure(ctx, "lab", svc, nodes("10.0.0.1")); !isRetry(err) {
		t.Fatalf("create: %v, want a RetryError", err)
	}
	lb := oct.only().lb

	time.Sleep(firstRecheck)
	oct.resetCalls()
	_, err := m.Ensure(ctx, "lab", svc, nodes("10.0.0.1"))
	if !isRetry(err) || !strings.Contains(err.Error(), "PENDING_CREATE") {
		t.Fatalf("recheck: %v, want a RetryError naming PENDING_CREATE", err)
	}
	if len(oct.calls) != 1 || oct.calls[0] != "list_loadbalancers" {
		t.Errorf("a recheck made %v, want the one list of the shared view", oct.calls)
	}

	oct.err["list_loadbalancers"] = errors.New("503 Service Unavailable")
	time.Sleep(recheckAfter(time.Second, DefaultRequeue))
	oct.resetCalls()
	_, err = m.Ensure(ctx, "lab", svc, nodes("10.0.0.1"))
	if err == nil || isRetry(err) || !strings.Contains(err.Error(), "503") {
		t.Errorf("recheck with Octavia failing: %v, want the lookup's error", err)
	}
	if w := oct.writes(); len(w) != 0 {
		t.Errorf("a recheck with Octavia failing made writes %v", w)
	}

	delete(oct.err, "list_loadbalancers")
	oct.setStatus(lb.ID, StatusActive)
	if _, err := m.Ensure(ctx, "lab", svc, nodes("10.0.0.1")); err != nil {
		t.Fatalf("once ACTIVE: %v", err)
	}
	if n := len(oct.lbs); n != 1 {
		t.Errorf("%d load balancers, want the one", n)
	}
}

// A Service alone waiting for a quick Octavia goes through its steps in
// one sync: the create, the wait inside the sync, the ingress.
func TestAServiceAloneWaitsForAQuickOctaviaInsideItsSync(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	oct.settle = "PENDING_CREATE"
	m := newManager(oct, net)
	m.SyncWait = 0 // the default
	svc := service()
	svc.UID = "uid-web"
	go func() {
		for range 100 {
			time.Sleep(20 * time.Millisecond)
			oct.mu.Lock()
			for _, l := range oct.lbs {
				l.lb.ProvisioningStatus = StatusActive
			}
			oct.mu.Unlock()
		}
	}()
	st, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
	if err != nil || len(st.Ingress) != 1 {
		t.Fatalf("Ensure: %v %v, want the ingress from one sync", st, err)
	}

	// Another Service waiting: this one hands its worker back at once.
	other := service()
	other.Name, other.UID = "api", "uid-api"
	oct.settle = "PENDING_CREATE"
	m2 := newManager(oct, net)
	m2.SyncWait = 0
	m2.busy.waits = map[waitKey]*wait{waitKeyOf(svc): {lbID: "elsewhere", due: time.Now().Add(time.Second)}}
	start := time.Now()
	if _, err := m2.Ensure(context.Background(), "lab", other, nodes("10.0.0.1")); !isRetry(err) {
		t.Fatalf("Ensure beside a waiting Service: %v, want a RetryError", err)
	}
	if took := time.Since(start); took > DefaultSyncWait/2 {
		t.Errorf("Ensure beside a waiting Service held its worker %s", took)
	}
}
