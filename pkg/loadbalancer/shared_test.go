package loadbalancer

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func (f *fakeOctavia) settleAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range f.lbs {
		if l.lb.ProvisioningStatus != StatusActive {
			l.lb.ProvisioningStatus = StatusActive
		}
	}
}

// run calls fn (an Ensure or Delete), letting Octavia settle between
// calls, until it succeeds; it returns the last error if it never does.
func run(t *testing.T, oct *fakeOctavia, fn func() error) error {
	t.Helper()
	var err error
	for range 12 {
		if err = fn(); err == nil || !isRetry(err) {
			return err
		}
		oct.settleAll()
	}
	return err
}

func ensureAll(t *testing.T, m *Manager, oct *fakeOctavia, svc *corev1.Service, ns []*corev1.Node) *corev1.LoadBalancerStatus {
	t.Helper()
	var st *corev1.LoadBalancerStatus
	if err := run(t, oct, func() (err error) { st, err = m.Ensure(context.Background(), "lab", svc, ns); return err }); err != nil {
		t.Fatalf("Ensure %s: %v", svc.Name, err)
	}
	return st
}

func deleteAll(t *testing.T, m *Manager, oct *fakeOctavia, svc *corev1.Service) {
	t.Helper()
	if err := run(t, oct, func() error { return m.Delete(context.Background(), "lab", svc) }); err != nil {
		t.Fatalf("Delete %s: %v", svc.Name, err)
	}
}

func sharing(name string, port, nodePort int32, lbID string) *corev1.Service {
	return service(func(s *corev1.Service) {
		s.Name = name
		s.Annotations[AnnotationLoadBalancerID] = lbID
		s.Spec.Ports = []corev1.ServicePort{{Name: "p", Protocol: corev1.ProtocolTCP, Port: port, NodePort: nodePort}}
	})
}

func listenerPorts(l *fakeLB) []int {
	var out []int
	for _, x := range l.tree.Listeners {
		out = append(out, x.Port)
	}
	slices.Sort(out)
	return out
}

func TestASharedLoadBalancerIsDeletedWithTheLastServiceOnly(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	ns := nodes("10.0.0.1", "10.0.0.2")
	web := service()
	stWeb := ensureAll(t, m, oct, web, ns)
	l := oct.only()

	api := sharing("api", 8080, 30880, l.lb.ID)
	oct.resetCalls()
	stAPI := ensureAll(t, m, oct, api, ns)
	if got := oct.writes(); !slices.Equal(got, []string{"update_loadbalancer", "create_listener", "create_pool", "batch_update_members"}) {
		t.Errorf("joining wrote %v, want the tag, then the listener, its pool and members one call each", got)
	}
	if len(oct.lbs) != 1 || stAPI.Ingress[0].IP != stWeb.Ingress[0].IP {
		t.Fatalf("load balancers %d, ingress %v vs %v: want one, shared", len(oct.lbs), stAPI.Ingress, stWeb.Ingress)
	}
	for _, tag := range []string{"kube_service_lab_shop_web", "kube_service_lab_shop_api"} {
		if !slices.Contains(l.lb.Tags, tag) {
			t.Errorf("tags %v lack %s", l.lb.Tags, tag)
		}
	}
	if got := listenerPorts(l); !slices.Equal(got, []int{80, 8080}) {
		t.Errorf("listeners on ports %v", got)
	}

	t.Run("each Service keeps to its own listeners", func(t *testing.T) {
		oct.resetCalls()
		ensureAll(t, m, oct, web, nodes("10.0.0.1"))
		if got := oct.writes(); !slices.Equal(got, []string{"batch_update_members"}) {
			t.Errorf("a node change of the creator wrote %v, want its own members only", got)
		}
		if got := listenerPorts(l); !slices.Equal(got, []int{80, 8080}) {
			t.Errorf("listeners on ports %v", got)
		}
	})

	t.Run("max-shared-lb refuses a third Service before any change", func(t *testing.T) {
		oct.resetCalls()
		_, err := m.Ensure(context.Background(), "lab", sharing("third", 9090, 30990, l.lb.ID), ns)
		if !errors.Is(err, ErrSharing) || len(oct.writes()) != 0 {
			t.Errorf("third Service: %v, writes %v", err, oct.writes())
		}
	})

	t.Run("a port another Service holds is a conflict, not a takeover", func(t *testing.T) {
		m.Config.MaxSharedLB = 3
		defer func() { m.Config.MaxSharedLB = 2 }()
		oct.resetCalls()
		_, err := m.Ensure(context.Background(), "lab", sharing("clash", 80, 30990, l.lb.ID), ns)
		if !errors.Is(err, ErrSharing) || len(oct.writes()) != 0 {
			t.Errorf("clashing Service: %v, writes %v", err, oct.writes())
		}
	})

	t.Run("deleting the creator keeps the load balancer for the other", func(t *testing.T) {
		deleteAll(t, m, oct, web)
		if len(oct.lbs) != 1 || len(net.fips) != 1 {
			t.Fatalf("load balancers %d, floating IPs %d: want both kept", len(oct.lbs), len(net.fips))
		}
		if got := listenerPorts(l); !slices.Equal(got, []int{8080}) {
			t.Errorf("listeners on ports %v, want the other Service's only", got)
		}
		if slices.Contains(l.lb.Tags, "kube_service_lab_shop_web") || !slices.Contains(l.lb.Tags, "kube_service_lab_shop_api") {
			t.Errorf("tags %v", l.lb.Tags)
		}
		st, exists, err := m.Get(context.Background(), "lab", api)
		if err != nil || !exists || st.Ingress[0].IP != stWeb.Ingress[0].IP {
			t.Errorf("Get of the remaining Service: %v %v %v", st, exists, err)
		}
	})

	t.Run("the last Service deletes it with its floating IP", func(t *testing.T) {
		deleteAll(t, m, oct, api)
		if len(oct.lbs) != 0 || len(net.fips) != 0 {
			t.Errorf("left %d load balancers, %d floating IPs", len(oct.lbs), len(net.fips))
		}
	})
}

func TestALoadBalancerMadeOutsideIsNeverDeleted(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	// The operator lets namespace shop use it.
	ext, err := oct.CreateLoadBalancer(context.Background(), Spec{Name: "ops-lb", Tags: []string{"team=ops", "kube_shared_with=shop"},
		Listeners: []ListenerSpec{{Name: "ops-https", Protocol: "TCP", Port: 443, Pool: PoolSpec{Protocol: "TCP", Method: "ROUND_ROBIN"}}}})
	if err != nil {
		t.Fatal(err)
	}
	oct.settleAll()
	svc := sharing("api", 8080, 30880, ext.ID)
	st := ensureAll(t, m, oct, svc, nodes("10.0.0.1"))
	if st.Ingress[0].IP != ext.VIPAddress || len(net.fips) != 0 {
		t.Errorf("ingress %v, floating IPs %v: want the VIP, none allocated", st.Ingress, net.fips)
	}
	l := oct.lbs[ext.ID]
	if got := listenerPorts(l); !slices.Equal(got, []int{443, 8080}) {
		t.Errorf("listeners %v", got)
	}
	deleteAll(t, m, oct, svc)
	if oct.lbs[ext.ID] == nil {
		t.Fatal("a load balancer made outside the cluster was deleted")
	}
	if got := listenerPorts(l); !slices.Equal(got, []int{443}) || !slices.Equal(l.lb.Tags, []string{"team=ops", "kube_shared_with=shop"}) {
		t.Errorf("after delete: listeners %v tags %v, want the operator's only", got, l.lb.Tags)
	}
}

func TestAnUnknownLoadBalancerIDIsAnEvent(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	svc := sharing("api", 8080, 30880, "no-such-lb")
	_, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
	var ia *InvalidAnnotationError
	if !errors.As(err, &ia) || ia.Annotation != AnnotationLoadBalancerID || len(oct.writes()) != 0 {
		t.Errorf("Ensure: %v, writes %v", err, oct.writes())
	}
	if err := m.Delete(context.Background(), "lab", svc); err != nil {
		t.Errorf("Delete of a Service whose load balancer is gone: %v", err)
	}
}

func TestTheCreatorMadeAgainIsAUserAgain(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	ns := nodes("10.0.0.1")
	web := service()
	ensureAll(t, m, oct, web, ns)
	l := oct.only()
	// A load balancer from before creators were tagged: no Service tag on
	// it or its listeners.
	l.lb.Tags = slices.DeleteFunc(l.lb.Tags, func(t string) bool { return t == "kube_service_lab_shop_web" })
	for i := range l.tree.Listeners {
		l.tree.Listeners[i].Tags = nil
	}
	api := sharing("api", 8080, 30880, l.lb.ID)
	ensureAll(t, m, oct, api, ns)
	if !slices.Contains(l.lb.Tags, "kube_service_lab_shop_web") {
		t.Fatalf("tags %v: joining did not write down the creator", l.lb.Tags)
	}
	deleteAll(t, m, oct, web)
	ensureAll(t, m, oct, web, ns) // the creator Service is made again
	if !slices.Contains(l.lb.Tags, "kube_service_lab_shop_web") {
		t.Fatalf("tags %v: the creator made again is not a user", l.lb.Tags)
	}
	deleteAll(t, m, oct, api)
	if len(oct.lbs) != 1 || !slices.Equal(listenerPorts(l), []int{80}) {
		t.Fatalf("load balancers %d, listeners %v: want the creator's kept", len(oct.lbs), listenerPorts(l))
	}
	deleteAll(t, m, oct, web)
	if len(oct.lbs) != 0 || len(net.fips) != 0 {
		t.Errorf("left %d load balancers, %d floating IPs", len(oct.lbs), len(net.fips))
	}
}

func TestAListenerOfAnotherServiceKeepsTheLoadBalancerWhenItsTagWasLost(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	ns := nodes("10.0.0.1")
	web := service()
	ensureAll(t, m, oct, web, ns)
	l := oct.only()
	api := sharing("api", 8080, 30880, l.lb.ID)
	ensureAll(t, m, oct, api, ns)
	// Two tag updates raced and the sharer's tag was lost.
	l.lb.Tags = slices.DeleteFunc(l.lb.Tags, func(t string) bool { return t == "kube_service_lab_shop_api" })
	deleteAll(t, m, oct, web)
	if len(oct.lbs) != 1 || !slices.Equal(listenerPorts(l), []int{8080}) {
		t.Fatalf("load balancers %d, listeners %v: the other Service's listener must keep it", len(oct.lbs), listenerPorts(l))
	}
	deleteAll(t, m, oct, api)
	if len(oct.lbs) != 0 || len(net.fips) != 0 {
		t.Errorf("left %d load balancers, %d floating IPs", len(oct.lbs), len(net.fips))
	}
}

func TestTheAnnotationNamingTheServicesOwnLoadBalancerChangesNothing(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	ns := nodes("10.0.0.1")
	web := service()
	ensureAll(t, m, oct, web, ns)
	l := oct.only()
	// Upstream writes the annotation back on the Service that created it.
	web.Annotations[AnnotationLoadBalancerID] = l.lb.ID
	oct.resetCalls()
	ensureAll(t, m, oct, web, ns)
	if w := oct.writes(); len(w) != 0 {
		t.Errorf("writes %v", w)
	}
	deleteAll(t, m, oct, web)
	if len(oct.lbs) != 0 || len(net.fips) != 0 {
		t.Errorf("left %d load balancers, %d floating IPs", len(oct.lbs), len(net.fips))
	}
}

// Two Services of one load balancer deleted at once (concurrent service
// syncs, e.g. a namespace deleted) both read the tags before either wrote
// them. Seen in the e2e lab: each wrote back the other's tag, both left,
// and the load balancer was never deleted.
func TestTwoServicesLeavingAtOnceDeleteTheLoadBalancer(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	ns := nodes("10.0.0.1", "10.0.0.2")
	web := service()
	ensureAll(t, m, oct, web, ns)
	l := oct.only()
	api := sharing("api", 8080, 30880, l.lb.ID)
	ensureAll(t, m, oct, api, ns)
	id, err := m.identity(context.Background(), "lab")
	if err != nil {
		t.Fatal(err)
	}
	// Both syncs read the load balancer, then each removed its listeners.
	stale := l.lb
	stale.Tags = slices.Clone(l.lb.Tags)
	l.tree.Listeners = nil

	whole := map[string]bool{}
	for _, svc := range []*corev1.Service{web, api} {
		w, err := m.leaveShared(context.Background(), id, svc, &stale)
		if err != nil {
			t.Fatalf("%s leaving: %v", svc.Name, err)
		}
		whole[svc.Name] = w
	}
	if whole["web"] || !whole["api"] {
		t.Errorf("last user: web %v, api %v; want the second to leave to be the last and delete the load balancer", whole["web"], whole["api"])
	}
	if slices.Contains(l.lb.Tags, "kube_service_lab_shop_web") || !slices.Contains(l.lb.Tags, "kube_service_lab_shop_api") {
		t.Errorf("tags %v: want web's removed, api's (the last user's) left for the delete", l.lb.Tags)
	}
}
