package loadbalancer

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestTheIngressIsWhatUpstreamPublishes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		hostnames   bool
		suffix      string
		want        corev1.LoadBalancerIngress
	}{
		{"the floating IP, ipMode VIP", nil, false, "nip.io", ingressIP("203.0.113.1", corev1.LoadBalancerIPModeVIP)},
		{"the hostname annotation alone", map[string]string{AnnotationHostname: "shop.example.com"}, true, "nip.io",
			corev1.LoadBalancerIngress{Hostname: "shop.example.com"}},
		{"PROXY protocol with enable-ingress-hostname: <ip>.<suffix>", map[string]string{AnnotationProxyProtocol: "true"}, true, "nip.io",
			corev1.LoadBalancerIngress{Hostname: "203.0.113.1.nip.io"}},
		{"another ingress-hostname-suffix", map[string]string{AnnotationProxyProtocol: "v2"}, true, "sslip.io",
			corev1.LoadBalancerIngress{Hostname: "203.0.113.1.sslip.io"}},
		{"PROXY protocol without it: ipMode Proxy", map[string]string{AnnotationProxyProtocol: "true"}, false, "nip.io",
			ingressIP("203.0.113.1", corev1.LoadBalancerIPModeProxy)},
		{"enable-ingress-hostname without PROXY protocol changes nothing", nil, true, "nip.io", ingressIP("203.0.113.1", corev1.LoadBalancerIPModeVIP)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oct, net := newFakeOctavia(), newFakeNeutron()
			m := newManager(oct, net)
			m.Config.EnableIngressHostname, m.Config.IngressHostnameSuffix = tc.hostnames, tc.suffix
			svc := service(func(s *corev1.Service) {
				for k, v := range tc.annotations {
					s.Annotations[k] = v
				}
			})
			st := converge(t, m, oct, svc, nodes("10.0.0.1"))
			if len(st.Ingress) != 1 || !ingressEqual(st.Ingress[0], tc.want) {
				t.Errorf("ingress %+v, want %+v", st.Ingress, tc.want)
			}
		})
	}
}

func ingressIP(ip string, mode corev1.LoadBalancerIPMode) corev1.LoadBalancerIngress {
	return corev1.LoadBalancerIngress{IP: ip, IPMode: &mode}
}

func ingressEqual(a, b corev1.LoadBalancerIngress) bool {
	mode := func(m *corev1.LoadBalancerIPMode) string {
		if m == nil {
			return ""
		}
		return string(*m)
	}
	return a.IP == b.IP && a.Hostname == b.Hostname && mode(a.IPMode) == mode(b.IPMode)
}

func TestTheAddressIsRecordedOnTheServiceOnce(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	var writes []map[string]string
	m.Annotate = func(_ context.Context, _ *corev1.Service, a map[string]string) error {
		writes = append(writes, a)
		return nil
	}
	svc := service(func(s *corev1.Service) { s.Annotations[AnnotationHostname] = "shop.example.com" })
	converge(t, m, oct, svc, nodes("10.0.0.1"))
	if len(writes) != 1 || !strings.HasPrefix(writes[0][AnnotationLoadBalancerAddress], "203.0.113.") {
		t.Fatalf("annotations written %v, want the floating IP once", writes)
	}
	svc.Annotations[AnnotationLoadBalancerAddress] = writes[0][AnnotationLoadBalancerAddress]
	converge(t, m, oct, svc, nodes("10.0.0.1"))
	if len(writes) != 1 {
		t.Errorf("annotations written again although unchanged: %v", writes)
	}
}

func TestAFailedAddressRecordDoesNotHoldTheStatusBack(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	tries := 0
	m.Annotate = func(context.Context, *corev1.Service, map[string]string) error {
		tries++
		return errors.New("forbidden")
	}
	st := converge(t, m, oct, service(), nodes("10.0.0.1"))
	if len(st.Ingress) != 1 || st.Ingress[0].IP == "" || tries == 0 {
		t.Errorf("ingress %v after %d tries, want the floating IP", st.Ingress, tries)
	}
}

func TestAnInvalidHostnameIsAnEventAndNoCall(t *testing.T) {
	for _, v := range []string{"203.0.113.5", "Not_A_Host"} {
		oct, net := newFakeOctavia(), newFakeNeutron()
		m := newManager(oct, net)
		svc := service(func(s *corev1.Service) { s.Annotations[AnnotationHostname] = v })
		_, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
		if err == nil || !strings.Contains(err.Error(), AnnotationHostname) || !strings.Contains(err.Error(), v) {
			t.Errorf("%s: Ensure: %v, want an error naming the annotation and the value", v, err)
		}
		if len(oct.calls)+len(net.calls) != 0 {
			t.Errorf("%s: cloud calls %v %v", v, oct.calls, net.calls)
		}
	}
}
