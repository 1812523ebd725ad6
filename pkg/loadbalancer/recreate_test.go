package loadbalancer

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestALoadBalancerInErrorIsRecreatedKeepingItsFloatingIP(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	svc := service()
	st := converge(t, m, oct, svc, nodes("10.0.0.1"))
	ip := st.Ingress[0].IP
	broken := oct.only().lb.ID
	oct.setStatus(broken, StatusError)
	oct.resetCalls()

	_, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1", "10.0.0.2"))
	if !isRetry(err) || !strings.Contains(err.Error(), "ERROR: recreated it") || !strings.Contains(err.Error(), ip) {
		t.Fatalf("Ensure: %v, want a retry saying it recreated the load balancer keeping %s", err, ip)
	}
	if w := oct.writes(); strings.Join(w, ",") != "create_loadbalancer,delete_loadbalancer" {
		t.Errorf("Octavia writes %v, want one create and one delete", w)
	}
	fresh := oct.only()
	if fresh == nil || fresh.lb.ID == broken {
		t.Fatalf("load balancers %v: the broken one is still there", oct.lbs)
	}
	if len(fresh.tree.Listeners) != 1 || len(fresh.tree.Pools[fresh.tree.Listeners[0].DefaultPoolID].Members) != 2 {
		t.Errorf("the new load balancer is not fully populated: %+v", fresh.tree)
	}
	st = converge(t, m, oct, svc, nodes("10.0.0.1", "10.0.0.2"))
	if st.Ingress[0].IP != ip {
		t.Errorf("ingress %v after recreation, want the same floating IP %s", st.Ingress, ip)
	}
	if len(net.fips) != 1 {
		t.Errorf("floating IPs %v, want the one, moved", net.fips)
	}
}

func TestARecreationInterruptedBeforeTheMoveKeepsTheFloatingIP(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	svc := service()
	ip := converge(t, m, oct, svc, nodes("10.0.0.1")).Ingress[0].IP
	broken := oct.only().lb.ID
	oct.setStatus(broken, StatusError)
	// The replacement was created, then the CCM stopped.
	spec := oct.lbs[broken].lb
	if _, err := oct.CreateLoadBalancer(context.Background(), Spec{Name: spec.Name, Tags: spec.Tags}); err != nil {
		t.Fatal(err)
	}
	for id, l := range oct.lbs {
		if id != broken {
			l.lb.ProvisioningStatus = StatusActive
		}
	}
	_, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
	if err != nil && !isRetry(err) {
		t.Fatalf("Ensure: %v", err)
	}
	if _, ok := oct.lbs[broken]; ok || len(oct.lbs) != 1 {
		t.Fatalf("load balancers %v, want only the replacement", oct.lbs)
	}
	if got := converge(t, m, oct, svc, nodes("10.0.0.1")).Ingress[0].IP; got != ip {
		t.Errorf("ingress %s, want the floating IP %s kept", got, ip)
	}
	if len(net.fips) != 1 {
		t.Errorf("floating IPs %v, want only the original", net.fips)
	}
}

func TestAnInternalLoadBalancerInErrorWithAPinnedVIPIsDeletedFirst(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	svc := service(func(s *corev1.Service) {
		s.Annotations[AnnotationInternal] = "true"
		s.Spec.LoadBalancerIP = "10.0.0.100"
	})
	converge(t, m, oct, svc, nodes("10.0.0.1"))
	broken := oct.only().lb.ID
	oct.setStatus(broken, StatusError)
	oct.resetCalls()
	_, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
	if !isRetry(err) || !strings.Contains(err.Error(), "created again with the same VIP") {
		t.Fatalf("Ensure: %v", err)
	}
	if w := oct.writes(); strings.Join(w, ",") != "delete_loadbalancer" {
		t.Errorf("writes %v, want only the delete (the VIP is still held)", w)
	}
	st := converge(t, m, oct, svc, nodes("10.0.0.1"))
	if st.Ingress[0].IP != "10.0.0.100" || oct.only().lb.ID == broken {
		t.Errorf("ingress %v, load balancer %s", st.Ingress, oct.only().lb.ID)
	}
}

func TestAFailedReplacementChangesNothing(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	svc := service()
	converge(t, m, oct, svc, nodes("10.0.0.1"))
	broken := oct.only().lb.ID
	oct.setStatus(broken, StatusError)
	oct.err["create_loadbalancer"] = errors.New("quota exceeded")
	_, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
	if err == nil || isRetry(err) || !strings.Contains(err.Error(), "quota exceeded") {
		t.Fatalf("Ensure: %v, want the create failure", err)
	}
	if _, ok := oct.lbs[broken]; !ok {
		t.Error("the broken load balancer was deleted without a replacement")
	}
	for _, f := range net.fips {
		if f.PortID != oct.lbs[broken].lb.VIPPortID {
			t.Errorf("floating IP %s moved to %q", f.Address, f.PortID)
		}
	}
}

func TestAReplacementThatFailsTooKeepsTheFloatingIP(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	svc := service()
	ip := converge(t, m, oct, svc, nodes("10.0.0.1")).Ingress[0].IP
	old := oct.only().lb.ID
	// The replacement was made and got the floating IP, the old one's delete
	// failed, then the replacement went to ERROR as well.
	oct.setStatus(old, StatusError)
	oct.err["delete_loadbalancer"] = errors.New("boom")
	if _, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1")); err == nil {
		t.Fatal("Ensure succeeded although the delete failed")
	}
	delete(oct.err, "delete_loadbalancer")
	for id := range oct.lbs {
		oct.setStatus(id, StatusError)
	}
	for range 3 {
		if _, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1")); err != nil && !isRetry(err) {
			t.Fatal(err)
		}
		for id, l := range oct.lbs {
			if l.lb.ProvisioningStatus != StatusError {
				oct.setStatus(id, StatusActive)
			}
		}
	}
	if got := converge(t, m, oct, svc, nodes("10.0.0.1")).Ingress[0].IP; got != ip || len(net.fips) != 1 {
		t.Errorf("ingress %s, floating IPs %v; want %s kept", got, net.fips, ip)
	}
}

func TestANodeChangeAlsoRecreatesALoadBalancerInError(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	svc := service()
	ip := converge(t, m, oct, svc, nodes("10.0.0.1")).Ingress[0].IP
	broken := oct.only().lb.ID
	oct.setStatus(broken, StatusError)
	err := m.Update(context.Background(), "lab", svc, nodes("10.0.0.1", "10.0.0.2"))
	if !isRetry(err) || !strings.Contains(err.Error(), "recreated it") {
		t.Fatalf("Update: %v", err)
	}
	fresh := oct.only()
	if fresh.lb.ID == broken || len(memberAddresses(fresh)) != 2 {
		t.Errorf("load balancer %s with members %v, want a new one with both nodes", fresh.lb.ID, memberAddresses(fresh))
	}
	for _, f := range net.fips {
		if f.Address != ip || f.PortID != fresh.lb.VIPPortID {
			t.Errorf("floating IP %+v, want %s on the new VIP port", f, ip)
		}
	}
}
