package loadbalancer_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cloud-provider/api"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// Eight Services created at once wait for Octavia together: while they
// wait, their rechecks read one shared view of the cluster's load
// balancers, so the list calls grow with the rechecks of one Service, not
// with the number of Services (one list each per recheck, before).
func TestServicesWaitingTogetherShareOneLookPerRecheck(t *testing.T) {
	const services = 8
	env := newSimEnv(t, 1500*time.Millisecond)
	env.sim.ResetCalls()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rechecks := make([]int, services)
	var wg sync.WaitGroup
	errs := make(chan error, services)
	for i := range services {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: fmt.Sprintf("web-%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, err := env.m.Ensure(ctx, "lab", svc, benchNodes)
				var re *api.RetryError
				switch {
				case err == nil:
					return
				case errors.As(err, &re):
					if !strings.Contains(err.Error(), "WaitingForOctavia") {
						errs <- fmt.Errorf("%s: %w, want only waits for Octavia", svc.Name, err)
						return
					}
					rechecks[i]++
					time.Sleep(re.RetryAfter())
				default:
					errs <- fmt.Errorf("%s: %w", svc.Name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	most := 0
	for _, n := range rechecks {
		most = max(most, n)
	}
	if most < 4 {
		t.Fatalf("at most %d rechecks for a 1.5 s create: the Services were not brought back soon", most)
	}
	calls := env.sim.Calls()
	lists, gets := calls[cloudsim.ServiceLoadBalancer+".loadbalancers.list"], calls[cloudsim.ServiceLoadBalancer+".loadbalancers.get"]
	// Each Service lists by its name once to create and once when its
	// load balancer is ACTIVE; the rechecks share one list each, plus
	// slack for Services that come back a little apart.
	if limit := 2*services + 2*most; lists > limit || gets > 0 {
		t.Errorf("%d list and %d get calls for %d Services rechecked up to %d times, want at most %d lists and no gets", lists, gets, services, most, limit)
	}
	all, _ := octaviaCalls(env.sim)
	t.Logf("%d Services: %d rechecks at most, %d Octavia list calls, %.1f Octavia calls per Service", services, most, lists, float64(all)/services)
}

// A load balancer whose change Octavia never finishes (a dead
// octavia-worker): after StuckAfter the Service's sync says it is stuck,
// names it and what unblocks it, looks again only every 30 s, and the
// Manager counts it; nothing is created beside it. Once an admin marks it
// ERROR the next sync replaces it and keeps its floating IP.
func TestAStuckLoadBalancerIsReportedThenReplacedOnceMarkedError(t *testing.T) {
	env := newSimEnv(t, 0)
	env.m.StuckAfter = time.Second
	env.m.SyncWait = -1 // the syncs below are the service controller's
	env.m.Requeue = 100 * time.Millisecond
	ctx := context.Background()
	if err := env.sim.SetFault(cloudsim.FaultRule{Service: cloudsim.ServiceLoadBalancer, Operation: "provisioning", Hang: true, Times: 1}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
	nodes := simNodes("10.0.0.11", "10.0.0.12")
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for loadbalancer.StuckReason(errString(err)) == "" {
		if time.Now().After(deadline) {
			t.Fatalf("never reported stuck; last: %v", err)
		}
		_, err = env.m.Ensure(ctx, "lab", svc, nodes)
		var re *api.RetryError
		if !errors.As(err, &re) {
			t.Fatalf("Ensure: %v, want a RetryError while the load balancer is PENDING_CREATE", err)
		}
		if loadbalancer.StuckReason(err.Error()) == "" {
			time.Sleep(min(re.RetryAfter(), 200*time.Millisecond))
		}
	}
	stuck := onlyLB(t, env)
	var re *api.RetryError
	errors.As(err, &re)
	for _, want := range []string{stuck.ID, "PENDING_CREATE", "octavia-worker", "ERROR"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("stuck message %q does not name %q", err, want)
		}
	}
	if re.RetryAfter() < 30*time.Second {
		t.Errorf("a stuck load balancer is looked at again after %s, want 30 s or more", re.RetryAfter())
	}
	if got := env.m.Stuck(); len(got) != 1 || got[0].ID != stuck.ID {
		t.Errorf("Stuck() = %+v, want %s", got, stuck.ID)
	}
	fips, err := env.m.Neutron.FloatingIPs(ctx, stuck.VipPortID, "")
	if err != nil || len(fips) != 1 {
		t.Fatalf("floating IPs of the stuck VIP port: %v %v", fips, err)
	}
	env.sim.ResetCalls()
	if _, err := env.m.Ensure(ctx, "lab", svc, nodes); loadbalancer.StuckReason(errString(err)) == "" {
		t.Fatalf("Ensure on a stuck load balancer: %v", err)
	}
	if calls, writes := octaviaCalls(env.sim); calls > 1 || writes > 0 {
		t.Errorf("a sync of a Service with a stuck load balancer made %d Octavia calls (%d writes), want the one list", calls, writes)
	}

	if err := env.sim.MarkLoadBalancerError(stuck.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // past the shared view's freshness
	st := ensure(t, env.m, svc, nodes)
	if len(st.Ingress) != 1 || st.Ingress[0].IP != fips[0].Address {
		t.Errorf("ingress %v, want the floating IP %s kept", st.Ingress, fips[0].Address)
	}
	if lb := onlyLB(t, env); lb.ID == stuck.ID || lb.ProvisioningStatus != "ACTIVE" {
		t.Errorf("load balancer %s is %s, want a new ACTIVE one", lb.ID, lb.ProvisioningStatus)
	}
	if got := env.m.Stuck(); len(got) != 0 {
		t.Errorf("Stuck() = %+v after the replacement, want none", got)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Octavia's shape after a fully populated create it did not finish (the
// real soak: the API handed the create to the worker before committing
// the children): the load balancer ACTIVE, its listener, pool and members
// PENDING_CREATE for good, every change under them refused with 409. The
// sync waits StrandedAfter, then replaces it by itself (it never served),
// created bare with its children added one call each, keeping the
// floating IP; nothing is left counted as stuck.
func TestALoadBalancerStrandedByItsCreateIsReplacedKeepingItsAddress(t *testing.T) {
	env := newSimEnv(t, 0)
	env.m.StrandedAfter = 500 * time.Millisecond
	env.m.SyncWait = -1
	env.m.Requeue = 100 * time.Millisecond
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
	nodes := simNodes("10.0.0.11", "10.0.0.12")
	if _, err := env.m.Ensure(ctx, "lab", svc, nodes); err == nil {
		t.Fatal("the first sync of a new Service finished at once; want it waiting for Octavia")
	}
	created := onlyLB(t, env)
	if err := env.sim.StrandChildren(created.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	var st *corev1.LoadBalancerStatus
	var err error
	var sawWait, sawRecreate bool
	for {
		if time.Now().After(deadline) {
			t.Fatalf("never converged; last: %v", err)
		}
		st, err = env.m.Ensure(ctx, "lab", svc, nodes)
		if err == nil {
			break
		}
		var re *api.RetryError
		if !errors.As(err, &re) {
			t.Fatalf("Ensure over a stranded create: %v, want a RetryError", err)
		}
		sawWait = sawWait || strings.Contains(err.Error(), "listeners are PENDING_CREATE")
		sawRecreate = sawRecreate || (strings.Contains(err.Error(), "recreated it as") && strings.Contains(err.Error(), created.ID))
		if loadbalancer.StuckReason(err.Error()) != "" {
			t.Fatalf("reported stuck, want it replaced without an admin: %v", err)
		}
		time.Sleep(min(re.RetryAfter(), 200*time.Millisecond))
	}
	if !sawWait || !sawRecreate {
		t.Errorf("saw the wait %v and the replacement %v, want both said", sawWait, sawRecreate)
	}
	lb := onlyLB(t, env)
	if lb.ID == created.ID || lb.ProvisioningStatus != "ACTIVE" {
		t.Errorf("load balancer %s is %s, want a new ACTIVE one", lb.ID, lb.ProvisioningStatus)
	}
	fips, ferr := env.m.Neutron.FloatingIPs(ctx, lb.VipPortID, "")
	if ferr != nil || len(fips) != 1 || len(st.Ingress) != 1 || st.Ingress[0].IP != fips[0].Address {
		t.Errorf("ingress %v, floating IPs of the new VIP port %v (%v): want the one floating IP, moved", st.Ingress, fips, ferr)
	}
	tree, err := env.m.Octavia.Tree(ctx, lb.ID)
	if err != nil || len(tree.Listeners) != 1 || tree.Listeners[0].ProvisioningStatus != "ACTIVE" {
		t.Errorf("listeners of the replacement %+v (%v), want one ACTIVE", tree, err)
	}
	if got := env.m.Stuck(); len(got) != 0 {
		t.Errorf("Stuck() = %+v after the replacement, want none", got)
	}

	// The provider's next create is bare, its listener added after.
	api := svc.DeepCopy()
	api.Name, api.UID = "api", "uid-api"
	if _, err := env.m.Ensure(ctx, "lab", api, nodes); err == nil {
		t.Fatal("the first sync of a new Service finished at once; want it waiting for Octavia")
	}
	apiLB, err := env.m.Octavia.FindLoadBalancers(ctx, loadbalancer.LoadBalancerName("lab", loadbalancer.ServiceRef{Namespace: "shop", Name: "api"}), "")
	if err != nil || len(apiLB) != 1 {
		t.Fatalf("the second Service's load balancer: %v %v", apiLB, err)
	}
	if tree, err := env.m.Octavia.Tree(ctx, apiLB[0].ID); err != nil || len(tree.Listeners) != 0 {
		t.Errorf("listeners right after the create %+v (%v), want none: a provider that stranded a create gets bare ones", tree, err)
	}
	ensure(t, env.m, api, nodes)
}

// The upstream CCM writes its load balancer's ID into the Service's
// load-balancer-id annotation. Once Stackward has replaced that load
// balancer (stranded, or in ERROR), the annotation names one that is gone:
// the Service keeps its own load balancer and the annotation is pointed at
// it. A new Service naming a load balancer that does not exist still gets
// the annotation's error.
func TestAnAnnotationNamingAReplacedLoadBalancerIsCorrected(t *testing.T) {
	env := newSimEnv(t, 0)
	env.m.SyncWait = -1
	env.m.Requeue = 100 * time.Millisecond
	written := map[string]string{}
	env.m.Annotate = func(_ context.Context, _ *corev1.Service, a map[string]string) error {
		maps.Copy(written, a)
		return nil
	}
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web", Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
	nodes := simNodes("10.0.0.11")
	ensure(t, env.m, svc, nodes)
	own := onlyLB(t, env)

	const gone = "0c59e994-2578-4b15-82ff-f8ef29c115d0"
	svc.Annotations[loadbalancer.AnnotationLoadBalancerID] = gone
	if _, err := env.m.Ensure(ctx, "lab", svc, nodes); err != nil {
		t.Fatalf("Ensure with the annotation naming a load balancer that is gone: %v, want the Service's own used", err)
	}
	if written[loadbalancer.AnnotationLoadBalancerID] != own.ID {
		t.Errorf("annotations written %v, want %s=%s", written, loadbalancer.AnnotationLoadBalancerID, own.ID)
	}

	fresh := svc.DeepCopy()
	fresh.Name, fresh.UID = "new", "uid-new"
	var inv *loadbalancer.InvalidAnnotationError
	if _, err := env.m.Ensure(ctx, "lab", fresh, nodes); !errors.As(err, &inv) || !strings.Contains(err.Error(), "no such load balancer") {
		t.Errorf("a new Service naming no load balancer: %v, want the annotation's error", err)
	}
}
