package loadbalancer

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A retried create (or two leaders racing) leaves a second load balancer
// for the Service; the floating IP may have gone to that duplicate.
func TestDuplicateCleanupKeepsAddressesTheUserAskedFor(t *testing.T) {
	const named = "203.0.113.50"
	tests := []struct {
		name        string
		svc         *corev1.Service
		wantKept    bool // the duplicate's floating IP still exists
		wantOnFirst bool // ...and ends on the kept load balancer
	}{
		{name: "without keep-floatingip the duplicate's own address is released", svc: service(), wantKept: false},
		{name: "with keep-floatingip the duplicate's address is only detached",
			svc: service(func(s *corev1.Service) { s.Annotations[AnnotationKeepFloatingIP] = "true" }), wantKept: true},
		{name: "the address spec.loadBalancerIP names is never released and moves to the kept load balancer",
			svc: service(func(s *corev1.Service) { s.Spec.LoadBalancerIP = named }), wantKept: true, wantOnFirst: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oct, net := newFakeOctavia(), newFakeNeutron()
			m := newManager(oct, net)
			converge(t, m, oct, tt.svc, nodes("10.0.0.1"))
			first := oct.only().lb
			id := Identity{"lab", testUID}
			dupLB, err := oct.CreateLoadBalancer(context.Background(), Spec{Name: first.Name, Tags: LoadBalancerTags(id, refOf(tt.svc))})
			if err != nil {
				t.Fatal(err)
			}
			dup := oct.lbs[dupLB.ID]
			dup.lb.ProvisioningStatus = StatusActive
			dup.lb.CreatedAt = first.CreatedAt.Add(time.Second)
			// The floating IP (ours, allocated by the first sync) ended on
			// the duplicate's VIP port.
			var fipID string
			for fid, f := range net.fips {
				if f.PortID == first.VIPPortID {
					fipID = fid
				}
			}
			if fipID == "" {
				t.Fatalf("no floating IP on the first load balancer: %v", net.fips)
			}
			net.fips[fipID].PortID = dup.lb.VIPPortID
			converge(t, m, oct, tt.svc, nodes("10.0.0.1"))
			if len(oct.lbs) != 1 || oct.lbs[first.ID] == nil {
				t.Fatalf("load balancers %v, want only the first %s", oct.lbs, first.ID)
			}
			f, kept := net.fips[fipID]
			if kept != tt.wantKept {
				t.Errorf("duplicate's floating IP kept = %v, want %v", kept, tt.wantKept)
			}
			if tt.wantOnFirst && (!kept || f.PortID != first.VIPPortID || f.Address != named) {
				t.Errorf("floating IP %+v, want %s on the kept VIP port %s", f, named, first.VIPPortID)
			}
		})
	}
}
