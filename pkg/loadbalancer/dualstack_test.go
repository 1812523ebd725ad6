package loadbalancer

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestAnIPv6ServiceWithoutIPv6NodesCreatesNothing(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	svc := service(func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} })
	_, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
	if err == nil || !strings.Contains(err.Error(), "IPv6") || !strings.Contains(err.Error(), "subnet-id") {
		t.Fatalf("Ensure: %v, want an error saying no node has an IPv6 address and naming subnet-id", err)
	}
	if w := oct.writes(); len(w) != 0 || len(net.fips) != 0 {
		t.Errorf("cloud writes %v, floating IPs %v", w, net.fips)
	}
}

func TestASingleStackIPv6ServiceIsInternal(t *testing.T) {
	o, err := parseOptions(service(func(s *corev1.Service) {
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
		s.Annotations[AnnotationInternal] = "false"
	}), newManager(nil, nil).Config)
	if err != nil {
		t.Fatal(err)
	}
	if !o.ipv6 || !o.internal {
		t.Errorf("ipv6 %v internal %v: an IPv6-first Service has no floating IP (Neutron has none for IPv6), as upstream", o.ipv6, o.internal)
	}
}

func TestDualStackWithoutNodesOfTheSecondFamily(t *testing.T) {
	dual := func(policy corev1.IPFamilyPolicy) *corev1.Service {
		return service(func(s *corev1.Service) {
			s.Spec.IPFamilyPolicy = &policy
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		})
	}
	t.Run("RequireDualStack is an error naming the missing family, with nothing created", func(t *testing.T) {
		oct, net := newFakeOctavia(), newFakeNeutron()
		_, err := newManager(oct, net).Ensure(context.Background(), "lab", dual(corev1.IPFamilyPolicyRequireDualStack), nodes("10.0.0.1"))
		if err == nil || !strings.Contains(err.Error(), "RequireDualStack") || !strings.Contains(err.Error(), "IPv6") {
			t.Fatalf("Ensure: %v", err)
		}
		if w := oct.writes(); len(w) != 0 || len(net.fips) != 0 {
			t.Errorf("cloud writes %v, floating IPs %v", w, net.fips)
		}
	})
	t.Run("PreferDualStack gets an IPv4 load balancer without an additional VIP", func(t *testing.T) {
		oct, net := newFakeOctavia(), newFakeNeutron()
		_, err := newManager(oct, net).Ensure(context.Background(), "lab", dual(corev1.IPFamilyPolicyPreferDualStack), nodes("10.0.0.1"))
		if err != nil && !isRetry(err) {
			t.Fatal(err)
		}
		if len(oct.lbs) != 1 {
			t.Fatalf("%d load balancers", len(oct.lbs))
		}
		for _, l := range oct.lbs {
			if len(l.lb.AdditionalVIPs) != 0 {
				t.Errorf("additional VIPs %+v without IPv6 nodes", l.lb.AdditionalVIPs)
			}
		}
	})
	t.Run("nodes of both families give an additional VIP on the IPv6 nodes' subnet", func(t *testing.T) {
		oct, net := newFakeOctavia(), newFakeNeutron()
		net.subnets["fd00::1"] = "subnet-nodes-v6"
		n := nodes("10.0.0.1")
		n[0].Status.Addresses = append(n[0].Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::1"})
		_, err := newManager(oct, net).Ensure(context.Background(), "lab", dual(corev1.IPFamilyPolicyRequireDualStack), n)
		if err != nil && !isRetry(err) {
			t.Fatal(err)
		}
		for _, l := range oct.lbs {
			if len(l.lb.AdditionalVIPs) != 1 || l.lb.AdditionalVIPs[0].SubnetID != "subnet-nodes-v6" || l.lb.VIPSubnetID != "subnet-nodes" {
				t.Errorf("VIP subnet %s, additional VIPs %+v: want subnet-nodes and one on subnet-nodes-v6", l.lb.VIPSubnetID, l.lb.AdditionalVIPs)
			}
		}
	})
}
