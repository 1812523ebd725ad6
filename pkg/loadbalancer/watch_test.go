package loadbalancer

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"k8s.io/cloud-provider/api"
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

// A quick Octavia is waited for inside the sync: once a create was timed
// at a few milliseconds, the next Service's create, wait and ingress are
// one call. A kind of change known to be slow never holds the worker.
func TestAQuickOctaviaIsWaitedForInsideTheSyncASlowOneNot(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	oct.settle = "PENDING_CREATE"
	m := newManager(oct, net)
	m.SyncWait = 0 // the default
	settle := func() {
		for range 20 {
			time.Sleep(10 * time.Millisecond)
			oct.mu.Lock()
			for _, l := range oct.lbs {
				l.lb.ProvisioningStatus = StatusActive
			}
			oct.mu.Unlock()
		}
	}
	first := service()
	first.Name, first.UID = "first", "uid-first"
	if _, err := m.Ensure(context.Background(), "lab", first, nodes("10.0.0.1")); !isRetry(err) {
		t.Fatalf("the first create, of a kind not timed yet: %v, want a RetryError", err)
	}
	settle()
	if _, err := m.Ensure(context.Background(), "lab", first, nodes("10.0.0.1")); err != nil {
		t.Fatal(err)
	}
	if took := m.busy.settle["/PENDING_CREATE"]; took <= 0 || took > quickSettle {
		t.Fatalf("the create's time learned as %s, want the few milliseconds it took", took)
	}

	svc := service()
	svc.UID = "uid-web"
	go settle()
	st, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
	if err != nil || len(st.Ingress) != 1 {
		t.Fatalf("Ensure: %v %v, want the ingress from one sync", st, err)
	}

	slow := service()
	slow.Name, slow.UID = "api", "uid-api"
	m.busy.mu.Lock()
	m.busy.settle["/PENDING_CREATE"] = 5 * time.Second
	m.busy.mu.Unlock()
	start := time.Now()
	_, err = m.Ensure(context.Background(), "lab", slow, nodes("10.0.0.1"))
	var re *api.RetryError
	if !errors.As(err, &re) {
		t.Fatalf("Ensure with a slow Octavia: %v, want a RetryError", err)
	}
	if took := time.Since(start); took > quickSettle {
		t.Errorf("a sync waiting for a create known to take 5 s held its worker %s", took)
	}
	if got := re.RetryAfter(); got < 4*time.Second || got > DefaultRequeue {
		t.Errorf("first look after %s, want just before the 5 s such a create takes", got)
	}
}

func TestLooksComeWhenTheChangeShouldBeDone(t *testing.T) {
	const limit = 5 * time.Second
	for _, tc := range []struct {
		waited, expect, want time.Duration
	}{
		{0, 0, firstRecheck},                                               // unknown: soon
		{0, 3 * time.Second, 2700 * time.Millisecond},                      // just before it should be done
		{2800 * time.Millisecond, 3 * time.Second, 300 * time.Millisecond}, // then a tenth of it
		{5 * time.Second, 3 * time.Second, 5 * time.Second / 3},            // late: a third of the wait
		{0, 20 * time.Second, limit},                                       // never longer than the limit
	} {
		if got := nextLook(tc.waited, tc.expect, limit); got != tc.want {
			t.Errorf("waited %s for a change taking %s: next look in %s, want %s", tc.waited, tc.expect, got, tc.want)
		}
	}
	w := &busyWatch{}
	w.learn("amphora/PENDING_CREATE", 4*time.Second)
	w.learn("amphora/PENDING_CREATE", 2*time.Second)
	if got := w.settle["amphora/PENDING_CREATE"]; got != 3*time.Second {
		t.Errorf("learned %s from 4 s then 2 s, want their average 3 s", got)
	}
}

// A load balancer ACTIVE whose changes Octavia refuses with 409 for good
// (a child left PENDING_* by a dead worker, seen on the real services) is
// tried again later and later, never four times a second, and is reported
// stuck once that has lasted StuckAfter; a change accepted ends it.
func TestChangesRefusedForGoodBackOffThenAreStuck(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	m.StuckAfter = 600 * time.Millisecond
	svc := service()
	svc.UID = "uid-web"
	ctx := context.Background()
	converge(t, m, oct, svc, nodes("10.0.0.1"))
	oct.err["batch_update_members"] = gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusConflict}
	var delays []time.Duration
	var err error
	for range 20 {
		_, err = m.Ensure(ctx, "lab", svc, nodes("10.0.0.1", "10.0.0.2"))
		var re *api.RetryError
		if !errors.As(err, &re) {
			t.Fatalf("Ensure on a load balancer refusing changes: %v, want a RetryError", err)
		}
		if StuckReason(err.Error()) != "" {
			break
		}
		delays = append(delays, re.RetryAfter())
		time.Sleep(50 * time.Millisecond)
	}
	if StuckReason(errString(err)) == "" {
		t.Fatalf("never reported stuck; last: %v", err)
	}
	if len(delays) < 2 || delays[0] < firstRecheck || delays[len(delays)-1] < delays[0] {
		t.Errorf("delays %v, want a quarter of a second at least, growing", delays)
	}
	if got := m.Stuck(); len(got) != 1 || got[0].ID != oct.only().lb.ID {
		t.Errorf("Stuck() = %+v, want the refusing load balancer", got)
	}
	delete(oct.err, "batch_update_members")
	converge(t, m, oct, svc, nodes("10.0.0.1", "10.0.0.2"))
	if got := m.Stuck(); len(got) != 0 {
		t.Errorf("Stuck() = %+v once a change was accepted, want none", got)
	}
}
