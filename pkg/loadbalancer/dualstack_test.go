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

func TestAnIPv6ServiceIsInternal(t *testing.T) {
	o, err := parseOptions(service(func(s *corev1.Service) {
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
		s.Annotations[AnnotationInternal] = "false"
	}), newManager(nil, nil).Config)
	if err != nil {
		t.Fatal(err)
	}
	if !o.ipv6 || !o.internal {
		t.Errorf("ipv6 %v internal %v: an IPv6-first Service has no floating IP (Neutron has none for IPv6), as upstream", o.ipv6, o.internal)
	}
}
