package approver

import (
	"bytes"
	"context"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

func pendingCSR(name, user string, created time.Time) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec:       certificatesv1.CertificateSigningRequestSpec{Username: user},
	}
}

func TestNodeOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const a, b = "system:node:a", "system:node:b"
	type step struct {
		put    *certificatesv1.CertificateSigningRequest
		remove string
	}
	tests := []struct {
		name      string
		steps     []step
		user      string
		wantFirst []string // first(user, 2)
		admitted  []string // of the user's names, those admits lets through under a cap of 2
		probe     []string
	}{{
		name: "the oldest requests come first whatever the order they were seen in",
		steps: []step{
			{put: pendingCSR("x3", a, t0.Add(3*time.Second))},
			{put: pendingCSR("x1", a, t0.Add(time.Second))},
			{put: pendingCSR("x2", a, t0.Add(2*time.Second))},
		},
		user: a, wantFirst: []string{"x1", "x2"}, probe: []string{"x1", "x2", "x3"}, admitted: []string{"x1", "x2"},
	}, {
		name: "requests of the same second are ordered by name",
		steps: []step{
			{put: pendingCSR("c", a, t0)}, {put: pendingCSR("a", a, t0)}, {put: pendingCSR("b", a, t0)},
		},
		user: a, wantFirst: []string{"a", "b"}, probe: []string{"a", "b", "c"}, admitted: []string{"a", "b"},
	}, {
		name: "a decided request makes room for the next",
		steps: []step{
			{put: pendingCSR("x1", a, t0)}, {put: pendingCSR("x2", a, t0.Add(time.Second))}, {put: pendingCSR("x3", a, t0.Add(2*time.Second))},
			{remove: "x1"},
		},
		user: a, wantFirst: []string{"x2", "x3"}, probe: []string{"x1", "x2", "x3"}, admitted: []string{"x2", "x3"},
	}, {
		name: "another node's requests take none of a node's places",
		steps: []step{
			{put: pendingCSR("b1", b, t0)}, {put: pendingCSR("b2", b, t0)}, {put: pendingCSR("b3", b, t0)},
			{put: pendingCSR("a1", a, t0.Add(time.Hour))},
		},
		user: a, wantFirst: []string{"a1"}, probe: []string{"a1"}, admitted: []string{"a1"},
	}, {
		name: "a request created again under the same name takes its new place",
		steps: []step{
			{put: pendingCSR("x1", a, t0)}, {put: pendingCSR("x2", a, t0.Add(time.Second))}, {put: pendingCSR("x3", a, t0.Add(2*time.Second))},
			{put: pendingCSR("x1", a, t0.Add(time.Hour))},
		},
		user: a, wantFirst: []string{"x2", "x3"}, probe: []string{"x1", "x2", "x3"}, admitted: []string{"x2", "x3"},
	}, {
		name: "a request not seen yet waits when the node's places are taken",
		steps: []step{
			{put: pendingCSR("x1", a, t0)}, {put: pendingCSR("x2", a, t0)},
		},
		user: a, wantFirst: []string{"x1", "x2"}, probe: []string{"unseen"}, admitted: nil,
	}, {
		name: "a request not seen yet is decided while the node has room",
		steps: []step{
			{put: pendingCSR("x1", a, t0)},
		},
		user: a, wantFirst: []string{"x1"}, probe: []string{"unseen"}, admitted: []string{"unseen"},
	}, {
		name: "removing the last request of a node forgets the node",
		steps: []step{
			{put: pendingCSR("x1", a, t0)}, {remove: "x1"}, {remove: "never-seen"},
		},
		user: a, wantFirst: nil, probe: []string{"x1"}, admitted: []string{"x1"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newNodeOrder()
			for _, s := range tt.steps {
				if s.put != nil {
					o.put(s.put)
				} else {
					o.remove(s.remove)
				}
			}
			if got := o.first(tt.user, 2); !slices.Equal(got, tt.wantFirst) {
				t.Errorf("first two: %v, want %v", got, tt.wantFirst)
			}
			var admitted []string
			for _, name := range tt.probe {
				if ok, _ := o.admits(tt.user, name, 2); ok {
					admitted = append(admitted, name)
				}
			}
			if !slices.Equal(admitted, tt.admitted) {
				t.Errorf("admitted under a cap of 2: %v, want %v", admitted, tt.admitted)
			}
			if len(tt.wantFirst) == 0 && len(o.byUser) != 0 {
				t.Errorf("%d nodes kept with nothing pending", len(o.byUser))
			}
		})
	}
}

// TestADecisionOfAFloodingNodeCostsLogarithmicWork: with 20,000 requests
// of one node pending, deciding one (the request leaves the order, the
// next few are read and each asks whether it may go) compares a few times
// log2(20,000) keys, not the flood (a sort per decision compared ~300,000).
func TestADecisionOfAFloodingNodeCostsLogarithmicWork(t *testing.T) {
	const n, limit = 20000, DefaultMaxPendingPerNode
	compares := 0
	o := newNodeOrderWith(func(a, b orderKey) bool { compares++; return lessKey(a, b) })
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		o.put(pendingCSR(fmt.Sprintf("flood-%05d", i), "system:node:flooder", t0.Add(time.Duration(i%977)*time.Second)))
	}
	for decision := range 50 {
		first := o.first("system:node:flooder", limit)
		compares = 0
		o.remove(first[0])
		next := o.first("system:node:flooder", limit)
		for _, name := range next {
			if ok, _ := o.admits("system:node:flooder", name, limit); !ok {
				t.Fatalf("decision %d: %s, among the oldest %d, is not admitted", decision, name, limit)
			}
		}
		if ok, _ := o.admits("system:node:flooder", "flood-19999", limit); ok {
			t.Fatalf("decision %d: the newest of the flood is admitted", decision)
		}
		if bound := 16 * bits.Len(uint(n)) * limit; compares > bound {
			t.Fatalf("decision %d compared %d keys, over %d (16·log2(n)·limit)", decision, compares, bound)
		}
	}
	if got := o.pendingCount("system:node:flooder"); got != n-50 {
		t.Errorf("%d pending after 50 decisions, want %d", got, n-50)
	}
}

func TestDeferralsAreLoggedOncePerIntervalPerNode(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := newDeferralLog(func() time.Time { return now }, 30*time.Second)
	var out bytes.Buffer
	logger := funcr.New(func(prefix, args string) { out.WriteString(args + "\n") }, funcr.Options{Verbosity: deferralLogVerbosity})
	for range 1000 {
		d.log(logger, "system:node:flooder", reasonOverNodeCap, "deferred")
	}
	d.log(logger, "system:node:other", reasonOverNodeCap, "deferred")
	d.log(logger, "system:node:flooder", reasonOverDenialBudget, "deferred")
	now = now.Add(31 * time.Second)
	d.log(logger, "system:node:flooder", reasonOverNodeCap, "deferred")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines for 1,003 deferrals of 2 nodes and 2 reasons over 2 intervals, want 4:\n%s", len(lines), out.String())
	}
	if !strings.Contains(lines[3], `"deferralsNotLogged"=999`) {
		t.Errorf("the second interval's line does not count the 999 deferrals left unwritten: %s", lines[3])
	}
	quiet := funcr.New(func(prefix, args string) { t.Errorf("a deferral logged below debug level: %s", args) }, funcr.Options{Verbosity: deferralLogVerbosity - 1})
	d.log(quiet, "system:node:new", reasonOverNodeCap, "deferred")
}

// TestDeletingAPendingRequestLetsTheNextOfItsNodeGo: under a cap of one
// pending request per node, deleting the oldest (a person cleaning up, or
// the garbage collector) queues the next one of that node at once, not at
// the next resync.
func TestDeletingAPendingRequestLetsTheNextOfItsNodeGo(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := makeCSR(t, csrSpec{name: "old", node: "node-a", ips: []string{"10.0.0.10"}, created: base})
	newer := makeCSR(t, csrSpec{name: "newer", node: "node-a", ips: []string{"10.0.0.10"}, created: base.Add(time.Minute)})
	client := fake.NewClientset(withNodesFor(old, newer)...)
	c, err := NewController(client, testCloud(), Options{Policy: testPolicy, MaxPendingPerNode: 1, Recorder: record.NewFakeRecorder(10)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.csrFactory.Start(ctx.Done())
	c.nodeFactory.Start(ctx.Done())
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		t.Fatal("caches did not sync")
	}
	// Both were queued when they were seen; no worker runs: take them off.
	for range 2 {
		key, _ := c.queue.Get()
		c.queue.Done(key)
		c.queue.Forget(key)
	}
	if ok, _ := c.order.admits("system:node:node-a", "newer", 1); ok {
		t.Fatal("the newer request is admitted while the older one is pending")
	}
	if err := client.CertificatesV1().CertificateSigningRequests().Delete(ctx, "old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		key, _ := c.queue.Get()
		got <- key
	}()
	select {
	case key := <-got:
		if key != "newer" {
			t.Errorf("queued %q after the oldest was deleted, want newer", key)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nothing queued after the oldest pending request was deleted")
	}
	if ok, _ := c.order.admits("system:node:node-a", "newer", 1); !ok {
		t.Error("the newer request is still held back after the older one was deleted")
	}
}
