package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The namespace boundary (consent.go): what a namespace user's annotations
// can and cannot reach, each finding of the ownership review as a case.

func inNamespace(ns string) func(*corev1.Service) {
	return func(s *corev1.Service) { s.Namespace = ns }
}

// refusedNamingAnnotation asserts err is a refusal naming load-balancer-id.
func refusedNamingAnnotation(t *testing.T, what string, err error) {
	t.Helper()
	var ia *InvalidAnnotationError
	if !errors.As(err, &ia) || ia.Annotation != AnnotationLoadBalancerID || isRetry(err) {
		t.Fatalf("%s: %v, want a refusal naming %s", what, err, AnnotationLoadBalancerID)
	}
}

func TestAServiceOfAnotherNamespaceJoinsOnlyWithTheCreatorsConsent(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	ns := nodes("10.0.0.1")
	web := service()
	stWeb := ensureAll(t, m, oct, web, ns)
	l := oct.only()
	tagsBefore := slices.Clone(l.lb.Tags)

	intruder := sharing("api", 8080, 30880, l.lb.ID)
	intruder.Namespace = "other"
	oct.resetCalls()
	_, err := m.Ensure(context.Background(), "lab", intruder, ns)
	refusedNamingAnnotation(t, "Ensure of another namespace's Service", err)
	if !errors.Is(err, ErrNotShareable) || len(oct.writes()) != 0 || !slices.Equal(l.lb.Tags, tagsBefore) {
		t.Fatalf("Ensure: %v; writes %v, tags %v: want nothing changed", err, oct.writes(), l.lb.Tags)
	}
	if _, exists, err := m.Get(context.Background(), "lab", intruder); err != nil || exists {
		t.Errorf("Get of the refused Service: exists %v, %v; want none", exists, err)
	}
	deleteAll(t, m, oct, intruder)
	if len(oct.lbs) != 1 || !slices.Equal(listenerPorts(l), []int{80}) || !slices.Equal(l.lb.Tags, tagsBefore) {
		t.Fatalf("deleting the refused Service changed web's load balancer: listeners %v, tags %v", listenerPorts(l), l.lb.Tags)
	}

	t.Run("the creator's shared-with-namespaces annotation lets it join", func(t *testing.T) {
		web.Annotations[AnnotationSharedWithNamespaces] = "other"
		ensureAll(t, m, oct, web, ns)
		if !slices.Contains(l.lb.Tags, "kube_shared_with=other") {
			t.Fatalf("tags %v lack the consent tag", l.lb.Tags)
		}
		st := ensureAll(t, m, oct, intruder, ns)
		if st.Ingress[0].IP != stWeb.Ingress[0].IP || !slices.Equal(listenerPorts(l), []int{80, 8080}) {
			t.Errorf("ingress %v, listeners %v: want the shared address and both ports", st.Ingress, listenerPorts(l))
		}
	})
	t.Run("consent withdrawn keeps the Services already joined", func(t *testing.T) {
		delete(web.Annotations, AnnotationSharedWithNamespaces)
		ensureAll(t, m, oct, web, ns)
		if slices.Contains(l.lb.Tags, "kube_shared_with=other") {
			t.Fatalf("tags %v still carry the consent tag", l.lb.Tags)
		}
		ensureAll(t, m, oct, intruder, ns)
		third := sharing("third", 9090, 30990, l.lb.ID)
		third.Namespace = "other"
		m.Config.MaxSharedLB = 5
		_, err := m.Ensure(context.Background(), "lab", third, ns)
		refusedNamingAnnotation(t, "a new join after consent was withdrawn", err)
	})
}

func TestAnnotationsNeverReachAnotherClustersOrAnOperatorsLoadBalancer(t *testing.T) {
	for _, tc := range []struct {
		name string
		lb   LoadBalancer
		// waits: a Service upstream put on the load balancer waits for its
		// creator to adopt it (in progress), changing nothing meanwhile.
		waits bool
	}{
		{"another cluster's load balancer (its UID tag)", LoadBalancer{Name: "kube_service_lab_shop_web",
			Tags: []string{"kube_cluster_uid=other-cluster", "kube_service=shop/web", "kube_service_lab_shop_web", "kube_service_lab_shop_api"}}, false},
		{"the upstream CCM's load balancer of another Service, not adopted (maybe another cluster's of the same name)",
			LoadBalancer{Name: "kube_service_lab_shop_web", Tags: []string{"kube_service_lab_shop_web", "kube_service_lab_shop_api"}}, true},
		{"an operator's load balancer without consent", LoadBalancer{Name: "ops-lb", Tags: []string{"team=ops"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oct, net := newFakeOctavia(), newFakeNeutron()
			m := newManager(oct, net)
			spec := Spec{Name: tc.lb.Name, Tags: tc.lb.Tags,
				Listeners: []ListenerSpec{{Protocol: "TCP", Port: 8080, Tags: []string{"kube_service_lab_shop_api"}, Pool: PoolSpec{Protocol: "TCP", Method: "ROUND_ROBIN"}}}}
			lb, err := oct.CreateLoadBalancer(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			oct.settleAll()
			net.fips["fip-x"] = &FloatingIP{ID: "fip-x", Address: "203.0.113.99", PortID: lb.VIPPortID,
				Description: "Floating IP for Kubernetes external service shop/web from cluster lab"}
			// Its listener carries the tag this cluster's shop/api would
			// have: names collide between clusters of one name.
			api := sharing("api", 8080, 30880, lb.ID)
			oct.resetCalls()
			_, err = m.Ensure(context.Background(), "lab", api, nodes("10.0.0.1"))
			if tc.waits {
				if ProgressReason(fmt.Sprint(err)) != ReasonWaitingForAdoption {
					t.Fatalf("Ensure: %v, want %s", err, ReasonWaitingForAdoption)
				}
			} else {
				refusedNamingAnnotation(t, "Ensure", err)
			}
			if _, exists, err := m.Get(context.Background(), "lab", api); err != nil || exists {
				t.Errorf("Get: exists %v, %v; want none", exists, err)
			}
			if err := m.Delete(context.Background(), "lab", api); err != nil {
				t.Errorf("Delete: %v", err)
			}
			l := oct.lbs[lb.ID]
			if len(oct.writes()) != 0 || l == nil || !slices.Equal(l.lb.Tags, tc.lb.Tags) || !slices.Equal(listenerPorts(l), []int{8080}) || net.fips["fip-x"] == nil {
				t.Errorf("writes %v; load balancer %v: want it and its floating IP untouched", oct.writes(), l)
			}
		})
	}
}

func TestAServiceWithItsOwnLoadBalancerKeepsItWhenLoadBalancerIDIsAddedLater(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	ns := nodes("10.0.0.1")
	web := service()
	api := service(func(s *corev1.Service) { s.Name = "api" })
	stWeb := ensureAll(t, m, oct, web, ns)
	ensureAll(t, m, oct, api, ns)
	var webLB, apiLB *fakeLB
	for _, l := range oct.lbs {
		if l.lb.Name == "kube_service_lab_shop_web" {
			webLB = l
		} else {
			apiLB = l
		}
	}
	fipsBefore := len(net.fips)

	web.Annotations[AnnotationLoadBalancerID] = apiLB.lb.ID
	oct.resetCalls()
	_, err := m.Ensure(context.Background(), "lab", web, ns)
	refusedNamingAnnotation(t, "Ensure", err)
	if len(oct.writes()) != 0 || len(net.fips) != fipsBefore {
		t.Fatalf("writes %v, floating IPs %d: want nothing changed", oct.writes(), len(net.fips))
	}
	st, exists, err := m.Get(context.Background(), "lab", web)
	if err != nil || !exists || st.Ingress[0].IP != stWeb.Ingress[0].IP {
		t.Fatalf("Get: %v %v %v; want its own load balancer's address %v", st, exists, err, stWeb.Ingress)
	}
	deleteAll(t, m, oct, web)
	if oct.lbs[webLB.lb.ID] != nil || oct.lbs[apiLB.lb.ID] == nil || len(net.fips) != fipsBefore-1 {
		t.Errorf("after delete: web's %v, api's %v, %d floating IPs: want web's own gone with its address, api's kept",
			oct.lbs[webLB.lb.ID] != nil, oct.lbs[apiLB.lb.ID] != nil, len(net.fips))
	}
	if !slices.Equal(listenerPorts(apiLB), []int{80}) || slices.Contains(apiLB.lb.Tags, "kube_service_lab_shop_web") {
		t.Errorf("api's load balancer: listeners %v tags %v", listenerPorts(apiLB), apiLB.lb.Tags)
	}
}

func TestAKeptFloatingIPOutlivesTheLastUserOfAnotherNamespace(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep func(*corev1.Service, string)
	}{
		{"keep-floatingip", func(s *corev1.Service, _ string) { s.Annotations[AnnotationKeepFloatingIP] = "true" }},
		{"spec.loadBalancerIP", func(s *corev1.Service, ip string) { s.Spec.LoadBalancerIP = ip }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oct, net := newFakeOctavia(), newFakeNeutron()
			m := newManager(oct, net)
			ns := nodes("10.0.0.1")
			b := service(inNamespace("team-b"), func(s *corev1.Service) { s.Annotations[AnnotationSharedWithNamespaces] = "team-a" })
			st := ensureAll(t, m, oct, b, ns)
			tc.keep(b, st.Ingress[0].IP)
			ensureAll(t, m, oct, b, ns)
			a := sharing("a", 8080, 30880, oct.only().lb.ID)
			a.Namespace = "team-a"
			ensureAll(t, m, oct, a, ns)

			deleteAll(t, m, oct, b)
			deleteAll(t, m, oct, a)
			if len(oct.lbs) != 0 {
				t.Fatalf("%d load balancers left, want none", len(oct.lbs))
			}
			if len(net.fips) != 1 {
				t.Fatalf("floating IPs %v: B's kept address was released by A's delete", net.fips)
			}
			for _, f := range net.fips {
				if f.Address != st.Ingress[0].IP || f.PortID != "" {
					t.Errorf("floating IP %+v, want %s kept detached", f, st.Ingress[0].IP)
				}
			}
		})
	}
}

// failingGroupDeletes fails every security group delete while fail is set.
type failingGroupDeletes struct {
	*fakeSecGroups
	fail bool
}

func (f *failingGroupDeletes) DeleteGroup(ctx context.Context, id string) error {
	if f.fail {
		return errors.New("503 Service Unavailable")
	}
	return f.fakeSecGroups.DeleteGroup(ctx, id)
}

func TestASharingServicesSecurityGroupOutlivesNoFailedDelete(t *testing.T) {
	m, oct, sgs := sgEnv(t)
	groups := &failingGroupDeletes{fakeSecGroups: sgs}
	m.SecurityGroups = groups
	ns := nodes("10.0.0.1", "10.0.0.2")
	web := sgService()
	ensureAll(t, m, oct, web, ns)
	api := sharing("api", 8080, 30880, oct.only().lb.ID)
	api.UID = "7c2b1e5f-uid"
	ensureAll(t, m, oct, api, ns)
	if len(sgs.groups) != 2 {
		t.Fatalf("security groups %d, want web's and api's", len(sgs.groups))
	}

	groups.fail = true
	var err error
	for range 12 {
		if err = m.Delete(context.Background(), "lab", api); err == nil || !isRetry(err) {
			break
		}
		oct.settleAll()
	}
	if err == nil {
		t.Fatal("Delete succeeded while its security group could not be deleted")
	}
	// What the service controller asks before it drops the finalizer.
	if _, exists, err := m.Get(context.Background(), "lab", api); err != nil || !exists {
		t.Fatalf("Get after the failed group delete: exists %v, %v; want the Service still to have something", exists, err)
	}
	groups.fail = false
	deleteAll(t, m, oct, api)
	if _, exists, err := m.Get(context.Background(), "lab", api); err != nil || exists {
		t.Errorf("Get after delete: exists %v, %v", exists, err)
	}
	if len(sgs.groups) != 1 {
		t.Errorf("security groups %d after api left, want web's alone", len(sgs.groups))
	}
	for _, p := range sgs.ports {
		for _, g := range p.SecurityGroups {
			if sgs.groups[g] == nil && !slices.Contains([]string{"operator-sg", "default", "someone-else"}, g) {
				t.Errorf("port %s holds deleted group %s", p.ID, g)
			}
		}
	}
}

func TestAKeptFloatingIPOfAnotherNamespaceIsNotTakenBySpecLoadBalancerIP(t *testing.T) {
	for _, tc := range []struct {
		name, description, namespace string
		refused                      bool
	}{
		{"Stackward's, kept by a Service of another namespace", "Floating IP for Kubernetes Service team-b/web [stackward kube_cluster_uid=x]", "shop", true},
		{"the upstream CCM's, of another namespace", "Floating IP for Kubernetes external service team-b/web from cluster lab", "shop", true},
		{"Stackward's, kept by a Service of the same namespace", "Floating IP for Kubernetes Service shop/old [stackward kube_cluster_uid=x]", "shop", false},
		{"an operator's reserved address", "reserved for the shop team", "shop", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oct, net := newFakeOctavia(), newFakeNeutron()
			m := newManager(oct, net)
			net.fips["kept"] = &FloatingIP{ID: "kept", Address: "203.0.113.50", Description: tc.description}
			svc := service(inNamespace(tc.namespace), func(s *corev1.Service) { s.Spec.LoadBalancerIP = "203.0.113.50" })
			var err error
			for range 12 {
				if _, err = m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1")); err == nil || !isRetry(err) {
					break
				}
				oct.settleAll()
			}
			got := net.fips["kept"]
			if tc.refused {
				if !errors.Is(err, ErrFloatingIPOfAnotherNamespace) || got.PortID != "" || len(oct.lbs) != 0 {
					t.Errorf("Ensure: %v; floating IP on port %q, %d load balancers: want refused before anything is made", err, got.PortID, len(oct.lbs))
				}
				return
			}
			if err != nil || got.PortID == "" {
				t.Errorf("Ensure: %v; floating IP on port %q: want it attached", err, got.PortID)
			}
		})
	}
}
