package loadbalancer

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	servicehelper "k8s.io/cloud-provider/service/helpers"

	"github.com/stackward/stackward/pkg/config"
)

// The annotations understood on a Service, with the upstream OpenStack CCM's
// names and meanings (docs/reference/load-balancers.md documents them).
const (
	AnnotationInternal           = "service.beta.kubernetes.io/openstack-internal-load-balancer"
	AnnotationFloatingNetworkID  = "loadbalancer.openstack.org/floating-network-id"
	AnnotationFloatingSubnetID   = "loadbalancer.openstack.org/floating-subnet-id"
	AnnotationSubnetID           = "loadbalancer.openstack.org/subnet-id"
	AnnotationNetworkID          = "loadbalancer.openstack.org/network-id"
	AnnotationMemberSubnetID     = "loadbalancer.openstack.org/member-subnet-id"
	AnnotationKeepFloatingIP     = "loadbalancer.openstack.org/keep-floatingip"
	AnnotationProxyProtocol      = "loadbalancer.openstack.org/proxy-protocol"
	AnnotationLBMethod           = "loadbalancer.openstack.org/lb-method"
	AnnotationFlavorID           = "loadbalancer.openstack.org/flavor-id"
	AnnotationAvailabilityZone   = "loadbalancer.openstack.org/availability-zone"
	AnnotationConnectionLimit    = "loadbalancer.openstack.org/connection-limit"
	AnnotationTimeoutClientData  = "loadbalancer.openstack.org/timeout-client-data"
	AnnotationTimeoutMemberConn  = "loadbalancer.openstack.org/timeout-member-connect"
	AnnotationTimeoutMemberData  = "loadbalancer.openstack.org/timeout-member-data"
	AnnotationTimeoutTCPInspect  = "loadbalancer.openstack.org/timeout-tcp-inspect"
	AnnotationHealthMonitor      = "loadbalancer.openstack.org/enable-health-monitor"
	AnnotationMonitorDelay       = "loadbalancer.openstack.org/health-monitor-delay"
	AnnotationMonitorTimeout     = "loadbalancer.openstack.org/health-monitor-timeout"
	AnnotationMonitorMaxRetries  = "loadbalancer.openstack.org/health-monitor-max-retries"
	AnnotationMonitorRetriesDown = "loadbalancer.openstack.org/health-monitor-max-retries-down"
)

// InvalidAnnotationError names the annotation and the value it refused.
// The service controller turns the error into an Event on the Service.
type InvalidAnnotationError struct {
	Annotation, Value, Reason string
}

func (e *InvalidAnnotationError) Error() string {
	return fmt.Sprintf("annotation %s=%q: %s", e.Annotation, e.Value, e.Reason)
}

// options are a Service's settings: the [LoadBalancer] config overridden by
// its annotations, validated, before any cloud call.
type options struct {
	internal          bool
	floatingNetworkID string
	floatingSubnetID  string
	subnetID          string
	networkID         string
	memberSubnetID    string
	// memberSubnet is memberSubnetID's CIDR, once resolved; members take
	// their address of the type memberAddressType from it (memberaddr.go).
	memberSubnet      netip.Prefix
	memberAddressType corev1.NodeAddressType
	keepFloatingIP    bool
	proxyProtocol     string // "", "PROXY" or "PROXYV2"
	method            string
	flavorID          string
	zone              string
	provider          string
	connLimit         int
	timeouts          Timeouts
	monitor           bool
	monitorDelay      int
	monitorTimeout    int
	monitorRetries    int
	monitorDown       int
	allowedCIDRs      []string
	loadBalancerIP    string
	sharedWith        []string          // consent tags for other namespaces (consent.go)
	nodeSelector      map[string]string // members only from matching nodes (members.go)
	hostname          string            // status ingress hostname (hostname.go)
	// networks.go: floating subnet by name pattern or tags, the VIP port.
	floatingSubnet, floatingSubnetTags, portID string
	l7                                         l7Options // tls.go
	// IP families (dualstack.go): the first is IPv6; two families; the
	// policy is RequireDualStack; the Service may have a floating IP
	// (internal before an IPv6 first family forced it); the additional
	// VIP's subnet of a new dual-stack load balancer.
	ipv6, dualStack, requireDualStack, publicWanted bool
	additionalSubnetID                              string
}

var lbMethods = map[string]bool{"ROUND_ROBIN": true, "LEAST_CONNECTIONS": true, "SOURCE_IP": true, "SOURCE_IP_PORT": true}

// parseOptions reads the Service's annotations over the config. Every
// problem is reported at once; none of them leads to a cloud call.
func parseOptions(svc *corev1.Service, cfg config.LoadBalancer) (*options, error) {
	return parseOptionsFor(svc, cfg, "")
}

// parseOptionsFor is parseOptions for a load balancer that provider runs
// already ("" when there is none, or its provider is not known).
func parseOptionsFor(svc *corev1.Service, cfg config.LoadBalancer, provider string) (*options, error) {
	a := svc.Annotations
	p := &annotationParser{a: a}
	o := &options{
		internal:          p.boolean(AnnotationInternal, cfg.InternalLB),
		floatingNetworkID: p.str(AnnotationFloatingNetworkID, cfg.FloatingNetworkID),
		floatingSubnetID:  p.str(AnnotationFloatingSubnetID, cfg.FloatingSubnetID),
		subnetID:          p.str(AnnotationSubnetID, cfg.SubnetID),
		networkID:         p.str(AnnotationNetworkID, cfg.NetworkID),
		memberSubnetID:    p.str(AnnotationMemberSubnetID, cfg.MemberSubnetID),
		memberAddressType: p.memberAddressType(),
		keepFloatingIP:    p.boolean(AnnotationKeepFloatingIP, false),
		method:            strings.ToUpper(p.str(AnnotationLBMethod, cfg.LBMethod)),
		flavorID:          p.str(AnnotationFlavorID, cfg.FlavorID),
		zone:              p.str(AnnotationAvailabilityZone, cfg.AvailabilityZone),
		provider:          cfg.LBProvider,
		connLimit:         p.integer(AnnotationConnectionLimit, -1, -1),
		timeouts: Timeouts{
			ClientData:    p.integer(AnnotationTimeoutClientData, 0, 0),
			MemberConnect: p.integer(AnnotationTimeoutMemberConn, 0, 0),
			MemberData:    p.integer(AnnotationTimeoutMemberData, 0, 0),
			TCPInspect:    p.integer(AnnotationTimeoutTCPInspect, 0, 0),
		},
		monitorDelay:   p.integer(AnnotationMonitorDelay, int(cfg.MonitorDelay.Seconds()), 1),
		monitorTimeout: p.integer(AnnotationMonitorTimeout, int(cfg.MonitorTimeout.Seconds()), 1),
		monitorRetries: p.integer(AnnotationMonitorMaxRetries, cfg.MonitorMaxRetries, 1),
		monitorDown:    p.integer(AnnotationMonitorRetriesDown, cfg.MonitorMaxRetriesDown, 1),
		loadBalancerIP: svc.Spec.LoadBalancerIP,
		sharedWith:     p.namespaces(AnnotationSharedWithNamespaces, svc.Namespace),
		nodeSelector:   p.nodeSelector(cfg.NodeSelector),
		hostname:       p.hostname(),
	}
	p.networks(o, cfg)
	if provider != "" {
		o.provider = provider
	}
	if o.method == "" {
		o.method = defaultMethod(o.provider)
	}
	if !lbMethods[o.method] {
		name, val := AnnotationLBMethod, a[AnnotationLBMethod]
		if val == "" {
			name, val = "lb-method in [LoadBalancer]", cfg.LBMethod
		}
		p.fail(name, val, "one of ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP, SOURCE_IP_PORT")
	}
	if v, ok := a[AnnotationProxyProtocol]; ok {
		switch strings.ToLower(v) {
		case "true", "v1":
			o.proxyProtocol = "PROXY"
		case "v2":
			o.proxyProtocol = "PROXYV2"
		case "false", "":
		default:
			p.fail(AnnotationProxyProtocol, v, `one of "true" (or "v1"), "v2", "false"`)
		}
	}
	// A monitor is on when configured or annotated, and always for
	// externalTrafficPolicy Local (only nodes with endpoints may get
	// traffic) unless the annotation turns it off explicitly.
	o.monitor = p.boolean(AnnotationHealthMonitor, cfg.CreateMonitor || servicehelper.NeedsHealthCheck(svc))
	if o.monitor && o.monitorTimeout > o.monitorDelay {
		p.fail(AnnotationMonitorTimeout, strconv.Itoa(o.monitorTimeout), fmt.Sprintf("must not exceed the delay (%d s)", o.monitorDelay))
	}
	ranges, err := servicehelper.GetLoadBalancerSourceRanges(svc)
	if err != nil {
		p.fail("spec.loadBalancerSourceRanges or "+corev1.AnnotationLoadBalancerSourceRangesKey, strings.Join(svc.Spec.LoadBalancerSourceRanges, ","), err.Error())
	} else if !servicehelper.IsAllowAll(ranges) {
		o.allowedCIDRs = ranges.StringSlice()
	}
	for _, port := range svc.Spec.Ports {
		switch port.Protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			p.errs = append(p.errs, fmt.Errorf("port %q: protocol %q is not supported by Octavia", port.Name, port.Protocol))
		}
		if o.proxyProtocol != "" && port.Protocol != corev1.ProtocolTCP {
			p.fail(AnnotationProxyProtocol, a[AnnotationProxyProtocol], fmt.Sprintf("proxy protocol needs TCP, port %d is %s", port.Port, port.Protocol))
		}
	}
	if len(svc.Spec.Ports) == 0 {
		p.errs = append(p.errs, fmt.Errorf("service has no ports"))
	}
	parseL7(p, svc, cfg, o)
	parseFamily(svc, o)
	checkProvider(p, svc, cfg, o)
	if err := p.err(); err != nil {
		return nil, err
	}
	return o, nil
}

// annotationParser collects the problems of one Service's annotations.
type annotationParser struct {
	a    map[string]string
	errs []error
}

func (p *annotationParser) fail(name, value, reason string) {
	p.errs = append(p.errs, &InvalidAnnotationError{Annotation: name, Value: value, Reason: reason})
}

func (p *annotationParser) str(name, def string) string {
	if v, ok := p.a[name]; ok && v != "" {
		return v
	}
	return def
}

func (p *annotationParser) boolean(name string, def bool) bool {
	v, ok := p.a[name]
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		p.fail(name, v, `not a boolean ("true" or "false")`)
		return def
	}
	return b
}

func (p *annotationParser) integer(name string, def, minimum int) int {
	v, ok := p.a[name]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < minimum {
		p.fail(name, v, fmt.Sprintf("not an integer >= %d", minimum))
		return def
	}
	return n
}

// namespaces reads a comma-separated list of namespace names (or "*") as
// the consent tags they stand for; the Service's own namespace needs none.
func (p *annotationParser) namespaces(name, own string) []string {
	v, ok := p.a[name]
	if !ok {
		return nil
	}
	var out []string
	for _, ns := range strings.Split(v, ",") {
		ns = strings.TrimSpace(ns)
		switch {
		case ns == "" || ns == own:
			continue
		case ns != "*" && len(validation.IsDNS1123Label(ns)) > 0:
			p.fail(name, v, fmt.Sprintf("%q is not a namespace name or \"*\"", ns))
			return nil
		}
		out = append(out, consentPrefix+ns)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (p *annotationParser) err() error {
	switch len(p.errs) {
	case 0:
		return nil
	case 1:
		return p.errs[0]
	}
	return errors.Join(p.errs...)
}
