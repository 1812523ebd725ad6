package loadbalancer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/pkg/loadbalancer"
)

// providerCloud is the cloud the provider tests run against: a Manager on
// Octavia with the amphora and the ovn provider, a raw Octavia client to
// read back with, and the calls the cloud received by "service.operation".
// The simulator is one; the real-cloud lane runs the same tests against
// the real services by replacing newProviderCloud (counting the calls
// with the openstack.Caller's metrics there).
type providerCloud struct {
	m       *loadbalancer.Manager
	octavia *gophercloud.ServiceClient
	calls   func() map[string]int
	reset   func()
}

var newProviderCloud = func(t *testing.T) providerCloud {
	env := newSimEnv(t, 20*time.Millisecond)
	env.m.Requeue = 20 * time.Millisecond
	return providerCloud{m: env.m, octavia: env.octavia, calls: env.sim.Calls, reset: env.sim.ResetCalls}
}

func total(calls map[string]int) int {
	n := 0
	for _, c := range calls {
		n += c
	}
	return n
}

// providerRow is one line of the table "Load balancer providers" in
// docs/reference/load-balancers.md:
// what a Service asks for, and per provider whether it works ("") or is
// refused naming which annotation or field.
type providerRow struct {
	name    string
	mut     func(*corev1.Service)
	refused map[string]string // provider → the annotation named; absent: works
	only    string            // the one provider the row runs with ("" both)
}

func annotate(k, v string) func(*corev1.Service) {
	return func(s *corev1.Service) { s.Annotations[k] = v }
}

func port(p corev1.Protocol, n int32) func(*corev1.Service) {
	return func(s *corev1.Service) {
		s.Spec.Ports = []corev1.ServicePort{{Name: strings.ToLower(string(p)), Protocol: p, Port: n, NodePort: 30000 + n}}
	}
}

func both(fs ...func(*corev1.Service)) func(*corev1.Service) {
	return func(s *corev1.Service) {
		for _, f := range fs {
			f(s)
		}
	}
}

var providerRows = []providerRow{
	{name: "defaults", mut: func(*corev1.Service) {}},
	{name: "lb-method ROUND_ROBIN", mut: annotate(loadbalancer.AnnotationLBMethod, "ROUND_ROBIN"),
		refused: map[string]string{"ovn": loadbalancer.AnnotationLBMethod}},
	{name: "lb-method SOURCE_IP_PORT", mut: annotate(loadbalancer.AnnotationLBMethod, "SOURCE_IP_PORT")},
	{name: "proxy-protocol", mut: annotate(loadbalancer.AnnotationProxyProtocol, "true"),
		refused: map[string]string{"ovn": loadbalancer.AnnotationProxyProtocol}},
	{name: "x-forwarded-for", mut: annotate(loadbalancer.AnnotationXForwardedFor, "true"),
		refused: map[string]string{"ovn": loadbalancer.AnnotationXForwardedFor}},
	{name: "timeout-client-data", mut: annotate(loadbalancer.AnnotationTimeoutClientData, "60000"),
		refused: map[string]string{"ovn": loadbalancer.AnnotationTimeoutClientData}},
	{name: "timeout-member-connect", mut: annotate(loadbalancer.AnnotationTimeoutMemberConn, "3000"),
		refused: map[string]string{"ovn": loadbalancer.AnnotationTimeoutMemberConn}},
	{name: "connection-limit", mut: annotate(loadbalancer.AnnotationConnectionLimit, "100"),
		refused: map[string]string{"ovn": loadbalancer.AnnotationConnectionLimit}},
	{name: "TCP health monitor", mut: annotate(loadbalancer.AnnotationHealthMonitor, "true")},
	{name: "UDP port with a health monitor", mut: both(port(corev1.ProtocolUDP, 53), annotate(loadbalancer.AnnotationHealthMonitor, "true"))},
	{name: "SCTP port with a health monitor", mut: both(port(corev1.ProtocolSCTP, 3868), annotate(loadbalancer.AnnotationHealthMonitor, "true")),
		refused: map[string]string{"ovn": loadbalancer.AnnotationHealthMonitor}},
	{name: "SCTP port without a health monitor", mut: port(corev1.ProtocolSCTP, 3868)},
	{name: "externalTrafficPolicy Local", mut: func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = 32000
	}},
	{name: "sessionAffinity ClientIP", mut: func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }},
	{name: "default-tls-container-ref", only: "ovn",
		mut:     annotate(loadbalancer.AnnotationTLSContainerRef, "https://barbican.example/v1/containers/0b5e4d3c-3f0a-4a52-9e1c-2d7a4c1f2b11"),
		refused: map[string]string{"ovn": loadbalancer.AnnotationTLSContainerRef}},
	{name: "ipFamilyPolicy RequireDualStack", only: "ovn", mut: func(s *corev1.Service) {
		p := corev1.IPFamilyPolicyRequireDualStack
		s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &p, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	}, refused: map[string]string{"ovn": "spec.ipFamilyPolicy"}},
	{name: "loadBalancerSourceRanges", mut: func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"} },
		refused: map[string]string{"ovn": "spec.loadBalancerSourceRanges"}},
}

func TestProviderTable(t *testing.T) {
	for _, provider := range []string{"amphora", "ovn"} {
		cloud := newProviderCloud(t)
		cloud.m.Config.LBProvider = provider
		for i, row := range providerRows {
			if row.only != "" && row.only != provider {
				continue // amphora's side is in tls_sim_test.go and dualstack_sim_test.go
			}
			t.Run(provider+": "+row.name, func(t *testing.T) {
				svc := plainService(fmt.Sprintf("row-%d", i), row.mut)
				cloud.reset()
				want, refuse := row.refused[provider]
				if !refuse {
					ensure(t, cloud.m, svc, simNodes("10.0.0.11", "10.0.0.12"))
					deleteAndWait(t, cloud.m, svc)
					return
				}
				_, err := cloud.m.Ensure(context.Background(), "lab", svc, simNodes("10.0.0.11", "10.0.0.12"))
				var pe *loadbalancer.ProviderRefusedError
				if !errors.As(err, &pe) || pe.Annotation != want || pe.Provider != provider {
					t.Fatalf("Ensure = %v, want a refusal of %s by provider %s", err, want, provider)
				}
				if msg := err.Error(); !strings.Contains(msg, want) || !strings.Contains(msg, `"`+provider+`"`) {
					t.Errorf("the Event's message %q names neither %s nor the provider", msg, want)
				}
				if n := total(cloud.calls()); n != 0 {
					t.Errorf("a refused Service made %d cloud calls, want 0", n)
				}
			})
		}
	}
}

// plainService is a TCP/80 Service of type LoadBalancer changed by mut.
func plainService(name string, mut func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
	}
	mut(svc)
	return svc
}

func deleteAndWait(t *testing.T, m *loadbalancer.Manager, svc *corev1.Service) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := m.Delete(ctx, "lab", svc)
		if err == nil {
			if _, exists, err := m.Get(ctx, "lab", svc); err == nil && !exists {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("load balancer of %s not deleted: %v", svc.Name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestOVNServiceWithDefaults(t *testing.T) {
	cloud := newProviderCloud(t)
	cloud.m.Config.LBProvider = "ovn"
	svc := plainService("web", func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053})
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = 32000
	})
	cloud.reset()
	st := ensure(t, cloud.m, svc, simNodes("10.0.0.11", "10.0.0.12"))
	if len(st.Ingress) != 1 || st.Ingress[0].IP == "" {
		t.Fatalf("status %+v", st)
	}
	// The OVN provider reads no monitor from a single-call create: they
	// come in calls of their own.
	if calls := cloud.calls(); calls["load-balancer.loadbalancers.create"] != 1 || calls["load-balancer.healthmonitors.create"] != 2 {
		t.Errorf("calls %v, want one create and two monitor creates", calls)
	}
	ctx := context.Background()
	page, err := pools.List(cloud.octavia, pools.ListOpts{}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := pools.ExtractPools(page)
	if err != nil || len(ps) != 2 {
		t.Fatalf("pools %v, %v", ps, err)
	}
	for _, p := range ps {
		if p.LBMethod != "SOURCE_IP_PORT" {
			t.Errorf("pool %s balances by %s, want SOURCE_IP_PORT", p.Name, p.LBMethod)
		}
	}
	mpage, err := monitors.List(cloud.octavia, monitors.ListOpts{}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := monitors.ExtractMonitors(mpage)
	if err != nil || len(ms) != 2 {
		t.Fatalf("monitors %v, %v", ms, err)
	}
	for _, m := range ms {
		if m.Type != "TCP" && m.Type != "UDP-CONNECT" {
			t.Errorf("monitor %s is %s: the OVN provider has TCP and UDP-CONNECT only", m.Name, m.Type)
		}
	}

	t.Run("the simulator's ovn provider refuses ROUND_ROBIN as Octavia does", func(t *testing.T) {
		method := "ROUND_ROBIN"
		var err error
		deadline := time.Now().Add(5 * time.Second)
		for {
			// The last change may still be settling (409).
			_, err = pools.Update(ctx, cloud.octavia, ps[0].ID, pools.UpdateOpts{LBMethod: pools.LBMethod(method)}).Extract()
			if !gophercloud.ResponseCodeIs(err, 409) || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !gophercloud.ResponseCodeIs(err, 501) {
			t.Fatalf("update to %s: %v, want 501", method, err)
		}
		want := "Provider 'ovn' does not support a requested option: OVN provider does not support ROUND_ROBIN algorithm"
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not carry %q", err, want)
		}
	})
	// The TCP monitor of port 80 goes before the TCP listener is created and
	// comes back after (ovnmonitors.go); the UDP one stays.
	t.Run("a new port is its listener, pool, members and monitor in one call each, the TCP monitor removed and re-created around it", func(t *testing.T) {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443})
		cloud.reset()
		ensure(t, cloud.m, svc, simNodes("10.0.0.11", "10.0.0.12"))
		calls := cloud.calls()
		for op, want := range map[string]int{"load-balancer.listeners.create": 1, "load-balancer.pools.create": 1,
			"load-balancer.members.batch_update": 1, "load-balancer.healthmonitors.create": 2, "load-balancer.healthmonitors.delete": 1} {
			if calls[op] != want {
				t.Errorf("%s called %d times, want %d (all: %v)", op, calls[op], want, calls)
			}
		}
		page, err := pools.List(cloud.octavia, pools.ListOpts{}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all, _ := pools.ExtractPools(page)
		for _, p := range all {
			if len(p.Members) != 2 || p.LBMethod != "SOURCE_IP_PORT" {
				t.Errorf("pool %s: %d members by %s, want 2 by SOURCE_IP_PORT", p.Name, len(p.Members), p.LBMethod)
			}
		}
	})
	deleteAndWait(t, cloud.m, svc)
}
