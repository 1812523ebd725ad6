package loadbalancer

import (
	"context"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
)

// What the Service's status.loadBalancer.ingress says, as upstream builds it:
//   - loadbalancer.openstack.org/hostname set: that hostname alone (a DNS
//     name pointing at the load balancer, for PROXY-protocol hairpin);
//   - PROXY protocol with [LoadBalancer] enable-ingress-hostname: the
//     address as a hostname, <ip>.<ingress-hostname-suffix> (nip.io by
//     default), so that kube-proxy does not short-circuit traffic to the
//     address inside the cluster, bypassing the PROXY header;
//   - PROXY protocol otherwise: the address with ipMode Proxy, which tells
//     kube-proxy the same thing (Kubernetes 1.30+);
//   - else the address with ipMode VIP.
//
// The address itself (floating IP, or VIP without one) is also written to
// the Service as loadbalancer.openstack.org/load-balancer-address, the only
// place it shows when a hostname hides it.
const (
	AnnotationHostname            = "loadbalancer.openstack.org/hostname"
	AnnotationLoadBalancerAddress = "loadbalancer.openstack.org/load-balancer-address"
)

// hostname validates the hostname annotation: the apiserver refuses a
// status ingress hostname that is not a DNS name, or is an IP address.
func (p *annotationParser) hostname() string {
	v := strings.TrimSpace(p.a[AnnotationHostname])
	if v == "" {
		return ""
	}
	if _, err := netip.ParseAddr(v); err == nil {
		p.fail(AnnotationHostname, v, "an IP address is not a hostname; leave the annotation out to publish the address")
		return ""
	}
	if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
		p.fail(AnnotationHostname, v, "not a DNS name: "+strings.Join(errs, "; "))
		return ""
	}
	return v
}

// ingress is the Service's status for a load balancer with these floating
// IPs, and records the address on the Service when Annotate is set.
func (m *Manager) ingress(ctx context.Context, svc *corev1.Service, o *options, lb *LoadBalancer, fips []FloatingIP) *corev1.LoadBalancerStatus {
	st := status(lb, fips, serviceFamilies(svc))
	addr := st.Ingress[0].IP
	if m.Annotate != nil && svc.Annotations[AnnotationLoadBalancerAddress] != addr {
		// Informational: failing to write it must not hold back the status
		// that routes traffic. A later sync of the Service writes it.
		logger := klog.FromContext(ctx).WithValues("service", refOf(svc).String(), "address", addr)
		if err := m.Annotate(ctx, svc, map[string]string{AnnotationLoadBalancerAddress: addr}); err != nil {
			logger.Error(err, "Could not record the load balancer address on the Service", "annotation", AnnotationLoadBalancerAddress)
		} else {
			logger.V(2).Info("Recorded the load balancer address on the Service")
		}
	}
	return publish(st, o, m.Config.EnableIngressHostname, m.Config.IngressHostnameSuffix)
}

// publish turns the addresses into what the Service shows.
func publish(st *corev1.LoadBalancerStatus, o *options, hostnames bool, suffix string) *corev1.LoadBalancerStatus {
	if o.hostname != "" {
		return &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: o.hostname}}}
	}
	if o.proxyProtocol != "" && hostnames {
		out := &corev1.LoadBalancerStatus{}
		for _, in := range st.Ingress {
			out.Ingress = append(out.Ingress, corev1.LoadBalancerIngress{Hostname: in.IP + "." + strings.TrimPrefix(suffix, ".")})
		}
		return out
	}
	mode := corev1.LoadBalancerIPModeVIP
	if o.proxyProtocol != "" {
		mode = corev1.LoadBalancerIPModeProxy
	}
	for i := range st.Ingress {
		m := mode
		st.Ingress[i].IPMode = &m
	}
	return st
}
