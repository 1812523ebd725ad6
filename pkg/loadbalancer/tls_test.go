package loadbalancer

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	corev1 "k8s.io/api/core/v1"
)

const testTLSRef = "https://barbican.example:9311/v1/containers/6c1e4a3c-0b5a-4f7e-9d0a-6a1b2c3d4e5f"

func TestLayer7ListenersAreWhatUpstreamBuilds(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		defaultRef  string
		local       bool
		want        ListenerSpec // Protocol, TLSRef, InsertHeaders, Pool.Protocol, Pool.Monitor.Type
	}{
		{name: "x-forwarded-for makes an HTTP listener inserting the header, over an HTTP pool",
			annotations: map[string]string{AnnotationXForwardedFor: "true", AnnotationHealthMonitor: "true"},
			want: ListenerSpec{Protocol: "HTTP", InsertHeaders: map[string]string{"X-Forwarded-For": "true"},
				Pool: PoolSpec{Protocol: "HTTP", Monitor: &MonitorSpec{Type: "TCP"}}}},
		{name: "x-forwarded-for false changes nothing", annotations: map[string]string{AnnotationXForwardedFor: "false"},
			want: ListenerSpec{Protocol: "TCP", Pool: PoolSpec{Protocol: "TCP"}}},
		{name: "a TLS container makes a TERMINATED_HTTPS listener over an HTTP pool",
			annotations: map[string]string{AnnotationTLSContainerRef: testTLSRef},
			want:        ListenerSpec{Protocol: "TERMINATED_HTTPS", TLSRef: testTLSRef, Pool: PoolSpec{Protocol: "HTTP"}}},
		{name: "TLS and x-forwarded-for insert the header on the TERMINATED_HTTPS listener",
			annotations: map[string]string{AnnotationTLSContainerRef: testTLSRef, AnnotationXForwardedFor: "true"},
			want: ListenerSpec{Protocol: "TERMINATED_HTTPS", TLSRef: testTLSRef, InsertHeaders: map[string]string{"X-Forwarded-For": "true"},
				Pool: PoolSpec{Protocol: "HTTP"}}},
		{name: "TLS with proxy protocol keeps the PROXY pool",
			annotations: map[string]string{AnnotationTLSContainerRef: testTLSRef, AnnotationProxyProtocol: "true"},
			want:        ListenerSpec{Protocol: "TERMINATED_HTTPS", TLSRef: testTLSRef, Pool: PoolSpec{Protocol: "PROXY"}}},
		{name: "the [LoadBalancer] default certificate applies without the annotation", defaultRef: testTLSRef,
			want: ListenerSpec{Protocol: "TERMINATED_HTTPS", TLSRef: testTLSRef, Pool: PoolSpec{Protocol: "HTTP"}}},
		{name: "externalTrafficPolicy Local keeps the HTTP health check node port monitor", local: true,
			annotations: map[string]string{AnnotationXForwardedFor: "true"},
			want: ListenerSpec{Protocol: "HTTP", InsertHeaders: map[string]string{"X-Forwarded-For": "true"},
				Pool: PoolSpec{Protocol: "HTTP", Monitor: &MonitorSpec{Type: "HTTP"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oct, net := newFakeOctavia(), newFakeNeutron()
			m := newManager(oct, net)
			m.Config.DefaultTLSContainerRef = tt.defaultRef
			svc := service(func(s *corev1.Service) {
				s.Annotations = tt.annotations
				if tt.local {
					s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
					s.Spec.HealthCheckNodePort = 32000
				}
			})
			converge(t, m, oct, svc, nodes("10.0.0.1", "10.0.0.2"))
			tree := oct.only().tree
			if len(tree.Listeners) != 1 {
				t.Fatalf("listeners %+v", tree.Listeners)
			}
			l := tree.Listeners[0]
			pool := tree.Pools[l.DefaultPoolID]
			if l.Protocol != tt.want.Protocol || l.Port != 80 || l.TLSRef != tt.want.TLSRef || !l7Equal(l, tt.want) ||
				len(l.InsertHeaders) != len(tt.want.InsertHeaders) {
				t.Errorf("listener %+v, want %s/80 ref %q headers %v", l, tt.want.Protocol, tt.want.TLSRef, tt.want.InsertHeaders)
			}
			if pool.Protocol != tt.want.Pool.Protocol || len(pool.Members) != 2 || pool.Members[0].Port != 30080 {
				t.Errorf("pool %+v, want protocol %s with the two nodes on the NodePort", pool, tt.want.Pool.Protocol)
			}
			switch w := tt.want.Pool.Monitor; {
			case w == nil && pool.Monitor != nil:
				t.Errorf("monitor %+v, want none", pool.Monitor)
			case w != nil && (pool.Monitor == nil || pool.Monitor.Type != w.Type):
				t.Errorf("monitor %+v, want type %s", pool.Monitor, w.Type)
			}
		})
	}
}

func TestInvalidLayer7SettingsAreRefusedBeforeAnyCall(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		defaultRef  string
		udp         bool
		want        []string
	}{
		{name: "a non-boolean x-forwarded-for", annotations: map[string]string{AnnotationXForwardedFor: "yes"}, want: []string{AnnotationXForwardedFor, `"yes"`}},
		{name: "x-forwarded-for with proxy protocol", annotations: map[string]string{AnnotationXForwardedFor: "true", AnnotationProxyProtocol: "v2"},
			want: []string{AnnotationXForwardedFor, AnnotationProxyProtocol}},
		{name: "a certificate reference that is no URL", annotations: map[string]string{AnnotationTLSContainerRef: "my-cert"},
			want: []string{AnnotationTLSContainerRef, `"my-cert"`}},
		{name: "a reference to something else than a container or secret",
			annotations: map[string]string{AnnotationTLSContainerRef: "https://barbican.example/v1/orders/1"},
			want:        []string{AnnotationTLSContainerRef, "/v1/orders/1"}},
		{name: "a bad default in cloud.conf names the key", defaultRef: "cert", want: []string{"default-tls-container-ref in [LoadBalancer]", `"cert"`}},
		{name: "TLS on a UDP port", annotations: map[string]string{AnnotationTLSContainerRef: testTLSRef}, udp: true,
			want: []string{AnnotationTLSContainerRef, "UDP"}},
		{name: "x-forwarded-for on a UDP port", annotations: map[string]string{AnnotationXForwardedFor: "true"}, udp: true,
			want: []string{AnnotationXForwardedFor, "UDP"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oct, net := newFakeOctavia(), newFakeNeutron()
			m := newManager(oct, net)
			m.Config.DefaultTLSContainerRef = tt.defaultRef
			svc := service(func(s *corev1.Service) {
				s.Annotations = tt.annotations
				if tt.udp {
					s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053})
				}
			})
			_, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
			var iae *InvalidAnnotationError
			if !errors.As(err, &iae) {
				t.Fatalf("Ensure: %v, want an InvalidAnnotationError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
			if len(oct.calls)+len(net.calls) != 0 {
				t.Errorf("cloud calls were made: %v %v", oct.calls, net.calls)
			}
		})
	}
}

func TestLayer7ChangesAreTheFewestCalls(t *testing.T) {
	const otherRef = "https://barbican.example:9311/v1/containers/00000000-1111-4222-8333-444444444444"
	tests := []struct {
		name       string
		from, to   map[string]string
		wantWrites []string
	}{
		{name: "turning x-forwarded-for on replaces the TCP listener and pool (protocols are immutable)",
			from: map[string]string{}, to: map[string]string{AnnotationXForwardedFor: "true"},
			wantWrites: []string{"delete_pool", "delete_listener", "create_listener", "create_pool", "batch_update_members"}},
		{name: "turning TLS off replaces the TERMINATED_HTTPS listener and pool",
			from: map[string]string{AnnotationTLSContainerRef: testTLSRef}, to: map[string]string{},
			wantWrites: []string{"delete_pool", "delete_listener", "create_listener", "create_pool", "batch_update_members"}},
		{name: "another certificate is one listener update",
			from: map[string]string{AnnotationTLSContainerRef: testTLSRef}, to: map[string]string{AnnotationTLSContainerRef: otherRef},
			wantWrites: []string{"update_listener"}},
		{name: "x-forwarded-for on a TLS listener is one listener update",
			from:       map[string]string{AnnotationTLSContainerRef: testTLSRef},
			to:         map[string]string{AnnotationTLSContainerRef: testTLSRef, AnnotationXForwardedFor: "true"},
			wantWrites: []string{"update_listener"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oct, net := newFakeOctavia(), newFakeNeutron()
			m := newManager(oct, net)
			ns := nodes("10.0.0.1", "10.0.0.2")
			converge(t, m, oct, service(func(s *corev1.Service) { s.Annotations = tt.from }), ns)
			oct.resetCalls()
			svc := service(func(s *corev1.Service) { s.Annotations = tt.to })
			converge(t, m, oct, svc, ns)
			if got := oct.writes(); !slices.Equal(got, tt.wantWrites) {
				t.Errorf("Octavia writes %v, want %v", got, tt.wantWrites)
			}
			oct.resetCalls()
			converge(t, m, oct, svc, ns)
			if got := oct.writes(); len(got) != 0 {
				t.Errorf("a second sync made writes %v", got)
			}
		})
	}
}

func TestOctaviaRefusingTheCertificateNamesTheAnnotation(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	oct.err["create_loadbalancer"] = gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusBadRequest, Expected: []int{201},
		Body: []byte(`{"faultstring": "Could not retrieve certificate"}`)}
	m := newManager(oct, net)
	svc := service(func(s *corev1.Service) { s.Annotations = map[string]string{AnnotationTLSContainerRef: testTLSRef} })
	_, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
	var iae *InvalidAnnotationError
	if !errors.As(err, &iae) || iae.Value != testTLSRef || !strings.Contains(err.Error(), AnnotationTLSContainerRef) {
		t.Fatalf("Ensure: %v, want the annotation and its value named", err)
	}
	if len(oct.lbs) != 0 || len(net.fips) != 0 {
		t.Errorf("something was left in the cloud: %v %v", oct.lbs, net.fips)
	}
}

func TestAnExternalContainerStoreTakesAnyReference(t *testing.T) {
	cfg := newManager(nil, nil).Config
	cfg.ContainerStore = "external"
	o, err := parseOptions(service(func(s *corev1.Service) {
		s.Annotations[AnnotationTLSContainerRef] = "vault:kv/certs/web"
	}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if o.l7.tlsRef != "vault:kv/certs/web" {
		t.Errorf("reference %q", o.l7.tlsRef)
	}
}
