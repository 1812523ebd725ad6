package loadbalancer

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/config"
)

func TestTheRunningProviderDecides(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	m.Config.LBProvider = ProviderOVN
	svc := service()
	ns := nodes("10.0.0.1", "10.0.0.2")
	converge(t, m, oct, svc, ns)
	// A flavor chose the provider, or the config changed after the create:
	// the configuration no longer says ovn, the load balancer still is.
	m.Config.LBProvider = ""

	t.Run("an unchanged Service keeps SOURCE_IP_PORT and changes nothing", func(t *testing.T) {
		oct.resetCalls()
		converge(t, m, oct, svc, ns)
		if w := oct.writes(); len(w) != 0 {
			t.Errorf("writes %v, want none", w)
		}
		for _, p := range oct.only().tree.Pools {
			if p.Method != "SOURCE_IP_PORT" {
				t.Errorf("pool %s balances by %s", p.ID, p.Method)
			}
		}
	})

	t.Run("what the running provider refuses is refused before any change", func(t *testing.T) {
		oct.resetCalls()
		svc.Annotations[AnnotationTimeoutClientData] = "60000"
		_, err := m.Ensure(context.Background(), "lab", svc, ns)
		var pe *ProviderRefusedError
		if !errors.As(err, &pe) || pe.Provider != ProviderOVN || pe.Annotation != AnnotationTimeoutClientData {
			t.Fatalf("Ensure = %v, want the ovn provider's refusal of %s", err, AnnotationTimeoutClientData)
		}
		if w := oct.writes(); len(w) != 0 {
			t.Errorf("writes %v, want none", w)
		}
	})

	t.Run("a class selects the provider", func(t *testing.T) {
		m.Config.Classes = map[string]*config.LBClass{"ovn": {LBProvider: ProviderOVN}}
		o, err := parseOptions(service(func(s *corev1.Service) { s.Annotations[AnnotationClass] = "ovn" }), m.Config)
		if err != nil || o.provider != ProviderOVN || o.method != "SOURCE_IP_PORT" {
			t.Fatalf("options %+v, %v: want the ovn provider's SOURCE_IP_PORT", o, err)
		}
	})
}
