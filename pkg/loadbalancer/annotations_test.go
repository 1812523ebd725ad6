package loadbalancer

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/config"
)

func TestInvalidAnnotationsNameTheAnnotationAndValueAndChangeNothing(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		mut         func(*corev1.Service)
		want        []string
	}{
		{name: "a non-boolean internal flag", annotations: map[string]string{AnnotationInternal: "yes please"}, want: []string{AnnotationInternal, `"yes please"`}},
		{name: "an unknown lb method", annotations: map[string]string{AnnotationLBMethod: "RANDOM"}, want: []string{AnnotationLBMethod, `"RANDOM"`}},
		{name: "an unknown proxy protocol version", annotations: map[string]string{AnnotationProxyProtocol: "v3"}, want: []string{AnnotationProxyProtocol, `"v3"`}},
		{name: "a negative timeout", annotations: map[string]string{AnnotationTimeoutClientData: "-5"}, want: []string{AnnotationTimeoutClientData, `"-5"`}},
		{name: "a monitor timeout longer than its delay", annotations: map[string]string{AnnotationHealthMonitor: "true", AnnotationMonitorDelay: "2", AnnotationMonitorTimeout: "9"}, want: []string{AnnotationMonitorTimeout, `"9"`}},
		{name: "proxy protocol on a UDP port", annotations: map[string]string{AnnotationProxyProtocol: "true"}, mut: func(s *corev1.Service) { s.Spec.Ports[0].Protocol = corev1.ProtocolUDP }, want: []string{AnnotationProxyProtocol, "UDP"}},
		{name: "every problem at once", annotations: map[string]string{AnnotationLBMethod: "RANDOM", AnnotationKeepFloatingIP: "maybe"}, want: []string{AnnotationLBMethod, AnnotationKeepFloatingIP, `"maybe"`}},
		{name: "an invalid source range", mut: func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/33"} }, want: []string{"loadBalancerSourceRanges", "10.0.0.0/33"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oct, net := newFakeOctavia(), newFakeNeutron()
			m := newManager(oct, net)
			svc := service(func(s *corev1.Service) { s.Annotations = tt.annotations })
			if tt.mut != nil {
				tt.mut(svc)
			}
			_, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
			if err == nil {
				t.Fatal("Ensure accepted the Service")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
			if len(oct.calls)+len(net.calls) != 0 {
				t.Errorf("cloud calls were made: %v %v", oct.calls, net.calls)
			}
			var iae *InvalidAnnotationError
			if tt.annotations != nil && !errors.As(err, &iae) {
				t.Errorf("error %v is no InvalidAnnotationError", err)
			}
		})
	}
}

func TestOptionsFromConfigAndAnnotations(t *testing.T) {
	cfg := config.Defaults().LoadBalancer
	cfg.FloatingNetworkID, cfg.LBMethod, cfg.CreateMonitor = "conf-net", "LEAST_CONNECTIONS", false
	svc := service(func(s *corev1.Service) {
		s.Annotations = map[string]string{AnnotationFloatingNetworkID: "anno-net", AnnotationProxyProtocol: "v2", AnnotationKeepFloatingIP: "true"}
		s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
	})
	o, err := parseOptions(svc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if o.floatingNetworkID != "anno-net" || o.method != "LEAST_CONNECTIONS" || o.proxyProtocol != "PROXYV2" || !o.keepFloatingIP || o.monitor {
		t.Errorf("options %+v", o)
	}
	if len(o.allowedCIDRs) != 1 || o.allowedCIDRs[0] != "192.0.2.0/24" {
		t.Errorf("allowed CIDRs %v", o.allowedCIDRs)
	}
	t.Run("externalTrafficPolicy Local turns the monitor on as HTTP on the health check node port", func(t *testing.T) {
		local := service(func(s *corev1.Service) {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = 32000
		})
		o, err := parseOptions(local, cfg)
		if err != nil {
			t.Fatal(err)
		}
		spec := buildSpec(Identity{"lab", testUID}, local, o, nodes("10.0.0.1"))
		mon := spec.Listeners[0].Pool.Monitor
		if mon == nil || mon.Type != "HTTP" || mon.URLPath != "/healthz" || spec.Listeners[0].Pool.Members[0].MonitorPort != 32000 {
			t.Errorf("monitor %+v members %+v", mon, spec.Listeners[0].Pool.Members)
		}
	})
}
