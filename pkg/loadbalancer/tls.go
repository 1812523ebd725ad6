package loadbalancer

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
)

// Layer-7 listeners, as the upstream CCM builds them:
//   - x-forwarded-for "true": every listener is HTTP (not TCP) and inserts
//     X-Forwarded-For, so HTTP backends see the client's address;
//   - default-tls-container-ref (or [LoadBalancer] default-tls-container-ref):
//     every listener is TERMINATED_HTTPS with that Barbican container (or
//     secret), Octavia terminating TLS; with x-forwarded-for as well the
//     header is inserted too.
// Either way the pools speak HTTP to the NodePorts (PROXY with the
// proxy-protocol annotation, which upstream refuses together with
// x-forwarded-for) and the health monitors stay what the Service port
// gives (TCP, or HTTP on the health check node port), as upstream.
// Unlike upstream, a UDP or SCTP port with either annotation is refused
// rather than turned into an HTTP listener.

const (
	AnnotationXForwardedFor   = "loadbalancer.openstack.org/x-forwarded-for"
	AnnotationTLSContainerRef = "loadbalancer.openstack.org/default-tls-container-ref"
)

// Listener protocols of the layer-7 listeners and the header they insert.
const (
	ProtocolHTTP            = "HTTP"
	ProtocolTerminatedHTTPS = "TERMINATED_HTTPS"
	headerXForwardedFor     = "X-Forwarded-For"
)

// l7Options are a Service's layer-7 settings.
type l7Options struct {
	xForwardedFor bool
	tlsRef        string
	// tlsRefFrom names where tlsRef came from, for errors.
	tlsRefFrom string
}

// parseL7 reads x-forwarded-for and default-tls-container-ref into o.l7.
func parseL7(p *annotationParser, svc *corev1.Service, cfg config.LoadBalancer, o *options) {
	a := svc.Annotations
	o.l7.xForwardedFor = p.boolean(AnnotationXForwardedFor, false)
	o.l7.tlsRef, o.l7.tlsRefFrom = cfg.DefaultTLSContainerRef, "default-tls-container-ref in [LoadBalancer]"
	if v, ok := a[AnnotationTLSContainerRef]; ok {
		o.l7.tlsRef, o.l7.tlsRefFrom = v, AnnotationTLSContainerRef
	}
	// With container-store external the reference is the cloud's business,
	// as upstream: only Barbican references have a form to check.
	if o.l7.tlsRef != "" && cfg.ContainerStore != "external" {
		if reason := barbicanRefProblem(o.l7.tlsRef); reason != "" {
			p.fail(o.l7.tlsRefFrom, o.l7.tlsRef, reason)
		}
	}
	if o.l7.xForwardedFor && o.proxyProtocol != "" {
		p.fail(AnnotationXForwardedFor, a[AnnotationXForwardedFor], "cannot be used together with "+AnnotationProxyProtocol)
	}
	for _, port := range svc.Spec.Ports {
		if port.Protocol == corev1.ProtocolTCP {
			continue
		}
		if o.l7.tlsRef != "" {
			p.fail(o.l7.tlsRefFrom, o.l7.tlsRef, fmt.Sprintf("TLS termination needs TCP, port %d is %s", port.Port, port.Protocol))
		}
		if o.l7.xForwardedFor {
			p.fail(AnnotationXForwardedFor, a[AnnotationXForwardedFor], fmt.Sprintf("an HTTP listener needs TCP, port %d is %s", port.Port, port.Protocol))
		}
	}
}

// barbicanRefProblem says what is wrong with a Barbican reference, ""
// when it has the form https://<key-manager>/v1/{containers|secrets}/<id>.
func barbicanRefProblem(ref string) string {
	u, err := url.Parse(ref)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "not a Barbican reference (an http(s) URL of a container or secret)"
	}
	parts := strings.Split(strings.TrimSuffix(u.Path, "/"), "/")
	if n := len(parts); n < 2 || (parts[n-2] != "containers" && parts[n-2] != "secrets") || parts[n-1] == "" {
		return "not a Barbican reference: the path must end in /containers/<id> or /secrets/<id>"
	}
	return ""
}

// applyL7 turns a port's TCP listener into the HTTP or TERMINATED_HTTPS
// listener the Service asks for.
func applyL7(l *ListenerSpec, o *options) {
	if o.l7.tlsRef == "" && !o.l7.xForwardedFor {
		return
	}
	if o.l7.tlsRef != "" {
		l.Protocol, l.TLSRef = ProtocolTerminatedHTTPS, o.l7.tlsRef
	} else {
		l.Protocol = ProtocolHTTP
	}
	if o.l7.xForwardedFor {
		l.InsertHeaders = map[string]string{headerXForwardedFor: "true"}
	}
	if o.proxyProtocol == "" {
		l.Pool.Protocol = ProtocolHTTP
	}
}

// l7Equal compares what a listener update can change of the layer-7
// settings: the certificate and the inserted headers. An HTTP listener
// without headers and one with X-Forwarded-For "false" are the same.
func l7Equal(cur Listener, want ListenerSpec) bool {
	norm := func(h map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range h {
			if !strings.EqualFold(v, "false") {
				out[k] = strings.ToLower(v)
			}
		}
		return out
	}
	return cur.TLSRef == want.TLSRef && maps.Equal(norm(cur.InsertHeaders), norm(want.InsertHeaders))
}

// explainTLSRefusal names the certificate reference when Octavia refused
// a change to a spec that carries one with a 400: Octavia could not read
// the container in Barbican (missing, another project's, not a
// certificate), and the Event should say which setting to fix.
func explainTLSRefusal(err error, spec Spec) error {
	if err == nil || !openstack.IsInvalid(err) {
		return err
	}
	for _, l := range spec.Listeners {
		if l.TLSRef != "" {
			return errors.Join(err, &InvalidAnnotationError{Annotation: AnnotationTLSContainerRef + " (or default-tls-container-ref in [LoadBalancer])",
				Value: l.TLSRef, Reason: "Octavia refused the certificate: it must be a certificate container (or secret) in Barbican that this project can read"})
		}
	}
	return err
}
