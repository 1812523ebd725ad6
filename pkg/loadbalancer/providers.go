package loadbalancer

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/config"
)

// Octavia providers differ in what they accept. The amphora provider takes
// everything a Service can ask for; the OVN provider (ovn-octavia-provider,
// the one ML2/OVN clouds run) is a layer-4 load balancer in OVN itself and
// answers 501 "Provider 'ovn' does not support a requested option: ..." to
// much of it. What follows is what ovn-octavia-provider 3.0.0 (OpenStack
// Zed, Debian bookworm) does, read from its driver and checked against the
// running service (docs/reference/load-balancers.md, "Load balancer providers"):
//   - listeners and pools: TCP, UDP and SCTP only (HTTP, TERMINATED_HTTPS,
//     PROXY and PROXYV2 are refused: "OVN provider does not support HTTP
//     protocol");
//   - lb_algorithm: SOURCE_IP_PORT only ("OVN provider does not support
//     ROUND_ROBIN algorithm");
//   - allowed_cidrs: refused ("OVN provider does not support allowed_cidrs
//     option");
//   - health monitors: TCP and UDP-CONNECT only; members with a monitor
//     address or port are refused;
//   - members of the other IP family than the VIP are refused, and
//     additional VIPs are not implemented;
//   - timeouts, connection_limit and session_persistence are accepted by
//     Octavia's API and stored, but the provider never reads them.
// With that provider Stackward defaults to what it accepts and refuses,
// before any cloud call, what it would refuse or silently not do, naming
// the annotation (or field) and the provider.

// ProviderOVN is the OVN provider's name in Octavia.
const ProviderOVN = "ovn"

// ProviderRefusedError is a setting of a Service the load balancer's
// provider cannot carry out. The service controller turns it into an Event
// on the Service; nothing in the cloud is changed.
type ProviderRefusedError struct {
	Annotation, Value, Provider, Reason string
}

func (e *ProviderRefusedError) Error() string {
	return fmt.Sprintf("%s=%q is refused: the Octavia provider %q %s", e.Annotation, e.Value, e.Provider, e.Reason)
}

func isOVN(provider string) bool { return strings.EqualFold(provider, ProviderOVN) }

// defaultMethod is the lb_algorithm when neither the Service nor the config
// names one: the one algorithm the OVN provider has, else Octavia's usual.
func defaultMethod(provider string) string {
	if isOVN(provider) {
		return "SOURCE_IP_PORT"
	}
	return "ROUND_ROBIN"
}

// checkProvider refuses what o's provider cannot do. It runs after every
// other option is parsed, so it sees the Service's final settings.
func checkProvider(p *annotationParser, svc *corev1.Service, cfg config.LoadBalancer, o *options) {
	if !isOVN(o.provider) {
		return
	}
	a := svc.Annotations
	refuse := func(name, value, reason string) {
		p.errs = append(p.errs, &ProviderRefusedError{Annotation: name, Value: value, Provider: o.provider, Reason: reason})
	}
	if o.method != "SOURCE_IP_PORT" {
		name, val := AnnotationLBMethod, a[AnnotationLBMethod]
		if val == "" {
			name, val = "lb-method in [LoadBalancer]", cfg.LBMethod
		}
		refuse(name, val, "balances by SOURCE_IP_PORT only (Octavia answers 501 \"OVN provider does not support "+o.method+" algorithm\"); remove it to get SOURCE_IP_PORT")
	}
	if o.proxyProtocol != "" {
		refuse(AnnotationProxyProtocol, a[AnnotationProxyProtocol], "has TCP, UDP and SCTP pools only, no PROXY protocol (Octavia answers 501 \"OVN provider does not support "+o.proxyProtocol+" protocol\")")
	}
	if o.l7.xForwardedFor {
		refuse(AnnotationXForwardedFor, a[AnnotationXForwardedFor], "has TCP, UDP and SCTP listeners only: inserting X-Forwarded-For needs an HTTP listener (Octavia answers 501 \"OVN provider does not support HTTP protocol\")")
	}
	if o.l7.tlsRef != "" {
		refuse(o.l7.tlsRefFrom, o.l7.tlsRef, "cannot terminate TLS (Octavia answers 501 \"OVN provider does not support TERMINATED_HTTPS protocol\"); pass TLS through to the Service instead")
	}
	if len(o.allowedCIDRs) > 0 && !cfg.ManageSecurityGroups {
		refuse("spec.loadBalancerSourceRanges", strings.Join(o.allowedCIDRs, ","), "does not filter by source (Octavia answers 501 \"OVN provider does not support allowed_cidrs option\"); set manage-security-groups = true in [LoadBalancer]: the OVN provider keeps the client's address, so the Service's security group on the nodes enforces the ranges")
	}
	for _, t := range []struct {
		name string
		ms   int
	}{
		{AnnotationTimeoutClientData, o.timeouts.ClientData},
		{AnnotationTimeoutMemberConn, o.timeouts.MemberConnect},
		{AnnotationTimeoutMemberData, o.timeouts.MemberData},
		{AnnotationTimeoutTCPInspect, o.timeouts.TCPInspect},
	} {
		if t.ms != 0 {
			refuse(t.name, a[t.name], "has no listener timeouts: Octavia stores the value but the provider never applies it")
		}
	}
	if o.connLimit != -1 {
		refuse(AnnotationConnectionLimit, a[AnnotationConnectionLimit], "has no connection limit: Octavia stores the value but the provider never applies it")
	}
	if o.monitor {
		for _, port := range svc.Spec.Ports {
			if port.Protocol == corev1.ProtocolSCTP {
				val, ok := a[AnnotationHealthMonitor]
				if !ok {
					val = "(on by default: create-monitor or externalTrafficPolicy Local)"
				}
				refuse(AnnotationHealthMonitor, val, "monitors with TCP and UDP-CONNECT only, and port "+strconv.Itoa(int(port.Port))+" is SCTP (Octavia answers 501 \"OVN provider does not support SCTP health monitor type\"); set it to \"false\"")
				break
			}
		}
	}
	if o.dualStack {
		if o.requireDualStack {
			refuse("spec.ipFamilyPolicy", string(corev1.IPFamilyPolicyRequireDualStack), "serves one IP family per load balancer: members of the other family than the VIP are refused and additional VIPs are not implemented; use PreferDualStack or SingleStack")
		} else {
			// PreferDualStack: served by the first family, as when a node
			// lacks the second (dualstack.go).
			o.dualStack = false
		}
	}
}

// forProvider re-reads the Service's options for the provider that runs
// its load balancer when that is not the configured one: a flavor chose
// it, or the config changed after the create. What that provider refuses
// is refused before any change.
func (m *Manager) forProvider(svc *corev1.Service, o *options, lb *LoadBalancer) (*options, error) {
	if lb == nil || lb.Provider == "" || strings.EqualFold(lb.Provider, o.provider) ||
		(!isOVN(lb.Provider) && !isOVN(o.provider)) {
		return o, nil
	}
	return parseOptionsFor(svc, m.Config, lb.Provider)
}

// listenerCIDRs are the allowed_cidrs a listener carries: none with the OVN
// provider, where the Service's security group enforces the source ranges
// (checkProvider refuses them without one).
func listenerCIDRs(o *options) []string {
	if isOVN(o.provider) {
		return nil
	}
	return o.allowedCIDRs
}

// persistence is the pool's session_persistence for sessionAffinity
// ClientIP: none with the OVN provider, which stores and ignores it, so
// that the load balancer claims no affinity it does not have; kube-proxy
// still keeps a client on one endpoint per node.
func persistence(svc *corev1.Service, o *options) string {
	if svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP || isOVN(o.provider) {
		return ""
	}
	return "SOURCE_IP"
}

// The OVN provider makes in OVN only what its driver's call for an object
// reads, while Octavia stores (and reports) the whole graph it was given:
// loadbalancer_create reads the listeners, pools and members but no health
// monitor; listener_create the listener only (a nested default pool would
// be in Octavia and not in OVN); pool_create the pool only. So with it a
// new load balancer is created without monitors, and a new listener as
// the listener, its pool, the members and the monitor in one call each;
// the plan (plan.go) adds what is missing on the next syncs.

// createSpec is what the load balancer create carries.
func createSpec(spec Spec) Spec {
	if !isOVN(spec.Provider) {
		return spec
	}
	out := spec
	out.Listeners = make([]ListenerSpec, len(spec.Listeners))
	for i, l := range spec.Listeners {
		l.Pool.Monitor = nil
		out.Listeners[i] = l
	}
	return out
}

// Outside a load balancer create (Octavia's one graph call), real Octavia
// takes one object per call with every provider: a listener create with a
// nested default_pool, and a pool create with nested members or a health
// monitor, fail in Octavia 11 (Zed) with 500 "'dict' object has no
// attribute '_sa_instance_state'" (its single-object creates hand the
// nested dicts to the database model; seen in e2e/realcloud with the
// amphora provider). So a new listener is the listener, its pool, the
// members and the monitor in one call each, whatever the provider.

// newListener is what a listener create carries: the listener alone.
func newListener(_ string, l ListenerSpec) ListenerSpec {
	l.Pool = PoolSpec{}
	return l
}

// followUps are the steps that come after a listener (withPool) or pool
// create. They count as queued changes, so the sync asks to come back; the
// next plan, made from what then exists, runs them.
func followUps(_, key string, p PoolSpec, withPool bool) []step {
	later := func(ctx context.Context, _ Octavia) error {
		return fmt.Errorf("listener %s: a step planned after the one before it cannot run in the same sync", key)
	}
	var out []step
	if withPool {
		out = append(out, step{What: "create pool of listener " + key, do: later})
	}
	if len(p.Members) > 0 {
		out = append(out, step{What: fmt.Sprintf("set %d members of listener %s", len(p.Members), key), do: later})
	}
	if p.Monitor != nil {
		out = append(out, step{What: "create monitor of listener " + key, do: later, monitor: p.Protocol})
	}
	return out
}

// newPool is what a pool create carries: the pool alone (see newListener).
func newPool(_ string, p PoolSpec) PoolSpec {
	p.Members, p.Monitor = nil, nil
	return p
}
