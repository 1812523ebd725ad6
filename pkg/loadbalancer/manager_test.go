package loadbalancer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	corev1 "k8s.io/api/core/v1"
)

func TestCreateIsOneCallAndTheServiceComesBackWhenActive(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	svc := service()
	ctx := context.Background()

	_, err := m.Ensure(ctx, "lab", svc, nodes("10.0.0.1", "10.0.0.2"))
	if !isRetry(err) {
		t.Fatalf("first Ensure: %v, want a RetryError while the load balancer is PENDING_CREATE", err)
	}
	if got := oct.writes(); !slices.Equal(got, []string{"create_loadbalancer"}) {
		t.Errorf("Octavia writes %v, want one fully populated create", got)
	}
	l := oct.only()
	if l.lb.Name != "kube_service_lab_shop_web" || !slices.Contains(l.lb.Tags, ClusterTag(testUID)) || l.lb.VIPSubnetID != "subnet-nodes" {
		t.Errorf("load balancer %+v", l.lb)
	}
	if len(l.tree.Listeners) != 1 || l.tree.Listeners[0].Port != 80 || len(l.tree.Pools) != 1 {
		t.Fatalf("tree %+v", l.tree)
	}
	pool := l.tree.Pools[l.tree.Listeners[0].DefaultPoolID]
	if !sameMembers(pool.Members, []Member{{Address: "10.0.0.1", Port: 30080}, {Address: "10.0.0.2", Port: 30080}}) {
		t.Errorf("members %+v", pool.Members)
	}
	if len(net.fips) != 1 {
		t.Fatalf("floating IPs %v, want the VIP's", net.fips)
	}

	t.Run("while PENDING the Service is requeued without any change", func(t *testing.T) {
		oct.resetCalls()
		_, err := m.Ensure(ctx, "lab", svc, nodes("10.0.0.1", "10.0.0.2", "10.0.0.3"))
		if !isRetry(err) || len(oct.writes()) != 0 {
			t.Errorf("Ensure on a pending load balancer: %v, writes %v", err, oct.writes())
		}
	})

	oct.setStatus(l.lb.ID, StatusActive)
	oct.resetCalls()
	net.calls = nil
	st, err := m.Ensure(ctx, "lab", svc, nodes("10.0.0.1", "10.0.0.2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Ingress) != 1 || !strings.HasPrefix(st.Ingress[0].IP, "203.0.113.") {
		t.Errorf("status %+v, want the floating IP", st)
	}
	if w := oct.writes(); len(w) != 0 {
		t.Errorf("an unchanged Service made writes %v", w)
	}
	// The first sync after the wait read the shared view (watch.go) too.
	oct.resetCalls()
	net.calls = nil
	if _, err := m.Ensure(ctx, "lab", svc, nodes("10.0.0.1", "10.0.0.2")); err != nil {
		t.Fatal(err)
	}
	if reads := len(oct.calls) + len(net.calls); reads != 3 {
		t.Errorf("a steady-state sync made %d calls (%v %v), want 3: find, tree, floating IP", reads, oct.calls, net.calls)
	}
}

func TestChangesAreTheFewestCalls(t *testing.T) {
	tests := []struct {
		name      string
		svc       func(*corev1.Service)
		nodes     []string
		wantSteps []string
	}{
		{name: "a new node is one batch member update", nodes: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}, wantSteps: []string{"batch_update_members"}},
		{name: "a removed node is one batch member update", nodes: []string{"10.0.0.1"}, wantSteps: []string{"batch_update_members"}},
		// Real Octavia (Zed) refuses nested children outside a load balancer
		// create: the listener, its pool and its members are a call each.
		{name: "a new port is a listener, a pool and a members create", svc: func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053})
		}, wantSteps: []string{"create_listener", "create_pool", "batch_update_members"}},
		{name: "a removed port is its pool and listener deleted", svc: func(s *corev1.Service) {
			s.Spec.Ports[0] = corev1.ServicePort{Name: "sctp", Protocol: corev1.ProtocolSCTP, Port: 9000, NodePort: 30900}
		}, wantSteps: []string{"delete_pool", "delete_listener", "create_listener", "create_pool", "batch_update_members"}},
		{name: "source ranges are one listener update", svc: func(s *corev1.Service) {
			s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
		}, wantSteps: []string{"update_listener"}},
		{name: "turning on proxy protocol replaces the pool", svc: func(s *corev1.Service) {
			s.Annotations[AnnotationProxyProtocol] = "true"
		}, wantSteps: []string{"delete_pool", "create_pool", "batch_update_members"}},
		{name: "turning on the monitor is one monitor create", svc: func(s *corev1.Service) {
			s.Annotations[AnnotationHealthMonitor] = "true"
		}, wantSteps: []string{"create_healthmonitor"}},
		{name: "a new lb method is one pool update", svc: func(s *corev1.Service) {
			s.Annotations[AnnotationLBMethod] = "SOURCE_IP"
		}, wantSteps: []string{"update_pool"}},
		{name: "session affinity ClientIP is one pool update", svc: func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		}, wantSteps: []string{"update_pool"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oct, net := newFakeOctavia(), newFakeNeutron()
			m := newManager(oct, net)
			converge(t, m, oct, service(), nodes("10.0.0.1", "10.0.0.2"))
			oct.resetCalls()
			svc := service()
			if tt.svc != nil {
				tt.svc(svc)
			}
			ns := nodes("10.0.0.1", "10.0.0.2")
			if tt.nodes != nil {
				ns = nodes(tt.nodes...)
			}
			converge(t, m, oct, svc, ns)
			if got := oct.writes(); !slices.Equal(got, tt.wantSteps) {
				t.Errorf("Octavia writes %v, want %v", got, tt.wantSteps)
			}
			// And the result is what a fresh create would have built.
			oct.resetCalls()
			converge(t, m, oct, svc, ns)
			if got := oct.writes(); len(got) != 0 {
				t.Errorf("a second sync made writes %v", got)
			}
		})
	}
}

func TestUpdateLoadBalancerSyncsMembersOnly(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	svc := service()
	converge(t, m, oct, svc, nodes("10.0.0.1"))
	oct.resetCalls()
	net.calls = nil
	if err := m.Update(context.Background(), "lab", svc, nodes("10.0.0.1", "10.0.0.2")); err != nil {
		t.Fatal(err)
	}
	if got := oct.writes(); !slices.Equal(got, []string{"batch_update_members"}) {
		t.Errorf("writes %v", got)
	}
	if len(net.calls) != 0 {
		t.Errorf("a node change called Neutron: %v", net.calls)
	}
}

func TestAnotherClustersLoadBalancerOfTheSameNameIsNeverAdopted(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	other := newManager(oct, net)
	other.ClusterUID = func(context.Context) (string, error) { return "other-cluster-uid", nil }
	converge(t, other, oct, service(), nodes("10.0.0.1"))
	theirs := oct.only().lb.ID

	m := newManager(oct, net)
	if _, err := m.Ensure(context.Background(), "lab", service(), nodes("10.0.0.2")); !isRetry(err) {
		t.Fatalf("Ensure: %v", err)
	}
	if len(oct.lbs) != 2 {
		t.Fatalf("%d load balancers, want ours next to theirs", len(oct.lbs))
	}
	if p := oct.lbs[theirs].tree.Pools; len(p) != 1 {
		t.Errorf("their tree changed: %+v", p)
	}
	for id, l := range oct.lbs {
		if id != theirs {
			oct.setStatus(id, StatusActive)
		}
		_ = l
	}
	if err := m.Delete(context.Background(), "lab", service()); err != nil {
		t.Fatal(err)
	}
	if _, ok := oct.lbs[theirs]; !ok || len(oct.lbs) != 1 {
		t.Errorf("deleting ours touched theirs: %v", oct.lbs)
	}
}

func TestChangesOctaviaCannotMakeAreRefused(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	converge(t, m, oct, service(), nodes("10.0.0.1"))
	oct.resetCalls()
	svc := service(func(s *corev1.Service) { s.Annotations[AnnotationFlavorID] = "large" })
	_, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
	if !errors.Is(err, ErrImmutable) || !strings.Contains(err.Error(), AnnotationFlavorID) {
		t.Errorf("Ensure: %v", err)
	}
	if w := oct.writes(); len(w) != 0 {
		t.Errorf("writes %v", w)
	}
}

func TestDeleteReleasesOnlyTheFloatingIPsItAllocated(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		userFIP     bool
		wantFIPs    int
	}{
		{name: "an allocated floating IP is released"},
		{name: "keep-floatingip keeps it, detached", annotations: map[string]string{AnnotationKeepFloatingIP: "true"}, wantFIPs: 1},
		{name: "a floating IP the user brought in spec.loadBalancerIP is only detached", userFIP: true, wantFIPs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oct, net := newFakeOctavia(), newFakeNeutron()
			m := newManager(oct, net)
			svc := service(func(s *corev1.Service) { s.Annotations = tt.annotations })
			if s := svc; s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			if tt.userFIP {
				net.fips["mine"] = &FloatingIP{ID: "mine", Address: "198.51.100.7", Description: "reserved by hand"}
				svc.Spec.LoadBalancerIP = "198.51.100.7"
			}
			st := converge(t, m, oct, svc, nodes("10.0.0.1"))
			if tt.userFIP && st.Ingress[0].IP != "198.51.100.7" {
				t.Errorf("ingress %v, want spec.loadBalancerIP", st.Ingress)
			}
			if err := m.Delete(context.Background(), "lab", svc); err != nil {
				t.Fatal(err)
			}
			if len(oct.lbs) != 0 {
				t.Errorf("load balancers left: %v", oct.lbs)
			}
			if len(net.fips) != tt.wantFIPs {
				t.Errorf("floating IPs left: %v, want %d", net.fips, tt.wantFIPs)
			}
			for _, f := range net.fips {
				if f.PortID != "" {
					t.Errorf("floating IP %s still attached to %s", f.Address, f.PortID)
				}
			}
			oct.resetCalls()
			if err := m.Delete(context.Background(), "lab", svc); err != nil || len(oct.writes()) != 0 {
				t.Errorf("deleting again: %v, writes %v", err, oct.writes())
			}
		})
	}
}

func TestInternalLoadBalancerHasNoFloatingIP(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	svc := service(func(s *corev1.Service) { s.Annotations[AnnotationInternal] = "true" })
	st := converge(t, m, oct, svc, nodes("10.0.0.1"))
	if len(net.fips) != 0 || st.Ingress[0].IP != "10.0.0.100" {
		t.Errorf("status %v floating IPs %v, want the VIP and none", st, net.fips)
	}
}

func TestSeveralExternalNetworksIsAnErrorNamingThem(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	net.external = []string{"ext-a", "ext-b"}
	m := newManager(oct, net)
	_, err := m.Ensure(context.Background(), "lab", service(), nodes("10.0.0.1"))
	if err == nil || !strings.Contains(err.Error(), "ext-a") || !strings.Contains(err.Error(), AnnotationFloatingNetworkID) {
		t.Errorf("Ensure: %v", err)
	}
	if len(oct.writes()) != 0 {
		t.Errorf("writes %v", oct.writes())
	}
}

func TestADuplicateLoadBalancerIsDeletedAndTheOldestKept(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	svc := service()
	converge(t, m, oct, svc, nodes("10.0.0.1"))
	first := oct.only().lb.ID
	// A second leader created another before it saw the first.
	if _, err := oct.CreateLoadBalancer(context.Background(), Spec{Name: "kube_service_lab_shop_web", Tags: LoadBalancerTags(Identity{"lab", testUID}, refOf(svc))}); err != nil {
		t.Fatal(err)
	}
	for id, l := range oct.lbs {
		if id != first {
			l.lb.ProvisioningStatus = StatusActive
			l.lb.CreatedAt = oct.lbs[first].lb.CreatedAt.Add(time.Second)
			net.fips["dup"] = &FloatingIP{ID: "dup", Address: "203.0.113.99", PortID: l.lb.VIPPortID, Description: FloatingIPDescription(Identity{"lab", testUID}, refOf(svc))}
		}
	}
	converge(t, m, oct, svc, nodes("10.0.0.1"))
	if len(oct.lbs) != 1 || oct.lbs[first] == nil {
		t.Errorf("load balancers %v, want only the first %s", oct.lbs, first)
	}
	if _, ok := net.fips["dup"]; ok {
		t.Error("the duplicate's floating IP was not released")
	}
}

func TestOctaviaBusyOnAChangeIsARetryNotAFailure(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	converge(t, m, oct, service(), nodes("10.0.0.1"))
	oct.err["batch_update_members"] = gophercloud.ErrUnexpectedResponseCode{Actual: 409}
	_, err := m.Ensure(context.Background(), "lab", service(), nodes("10.0.0.1", "10.0.0.2"))
	if !isRetry(err) {
		t.Errorf("Ensure: %v, want a RetryError", err)
	}
}
