package approver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/openstack"
)

// The checks in this file ask the cloud (and, optionally, the apiserver).
// Only a definitive answer denies; every failure to answer is an error.

// checkInstance finds the requesting node's instance: by the Node's
// providerID when the Node exists and has one, else by exact server name
// (a node asking before the CCM initialized it, or before it registered).
func (e *Evaluator) checkInstance(ctx context.Context, r *request) (Decision, error) {
	node, err := e.nodes(ctx, r.nodeName)
	if err != nil {
		return Decision{}, fmt.Errorf("get node %q: %w", r.nodeName, err)
	}
	r.node = node
	providerID := ""
	if node != nil {
		providerID = node.Spec.ProviderID
	}
	if providerID != "" {
		r.lookup = fmt.Sprintf("provider ID %s", providerID)
	} else {
		r.lookup = fmt.Sprintf("name %q", r.nodeName)
	}
	inst, err := e.cloud.InstanceForNode(ctx, providerID, r.nodeName)
	switch {
	case errors.Is(err, openstack.ErrNotFound):
		if providerID != "" {
			return deny(ReasonInstanceNotFound, "no instance with provider ID %s (Node %s) in the cloud: %v", providerID, r.nodeName, err)
		}
		return deny(ReasonInstanceNotFound, "no instance named %q in the cloud", r.nodeName)
	case errors.Is(err, openstack.ErrInvalidProviderID):
		return deny(ReasonInvalidProviderID, "Node %s has provider ID %q, which is not an instance of this cloud: %v", r.nodeName, providerID, err)
	case errors.Is(err, openstack.ErrAmbiguous):
		return deny(ReasonInstanceAmbiguous, "several instances are named %q in the cloud; cannot tell which one is the node", r.nodeName)
	case err != nil:
		return Decision{}, fmt.Errorf("look up instance of node %q by %s: %w", r.nodeName, r.lookup, err)
	case inst == nil || inst.Server == nil:
		return Decision{}, fmt.Errorf("look up instance of node %q by %s: cloud returned no server and no error", r.nodeName, r.lookup)
	}
	r.instance, r.server = inst, inst.Server
	srv := inst.Server
	if srv.Status == openstack.StatusDeleted || srv.Status == openstack.StatusSoftDeleted {
		return deny(ReasonInstanceDeleted, "instance %s (id %s) of node %s is %s in the cloud", srv.Name, srv.ID, r.nodeName, srv.Status)
	}
	// The kubelet writes the Node's providerID itself when it registers, so
	// a node could point at another node's instance. It may only vouch for
	// an instance that carries its own name.
	if !e.isNodeNameOf(r.nodeName, srv.Name) {
		return deny(ReasonInstanceNameMismatch, "node %s found instance %s (id %s) by %s, but the instance is named %q",
			r.nodeName, srv.Name, srv.ID, r.lookup, srv.Name)
	}
	return cont()
}

// isNodeNameOf reports whether nodeName is the server's name, or the
// server's name with one of the configured DNS suffixes (kubelets that use
// their FQDN as node name).
func (e *Evaluator) isNodeNameOf(nodeName, serverName string) bool {
	n, s := strings.ToLower(nodeName), strings.ToLower(serverName)
	if n == s {
		return true
	}
	for _, suffix := range e.policy.DNSSuffixes {
		if n == s+"."+suffix {
			return true
		}
	}
	return false
}

// checkNames accepts an IP SAN only when it is one of the addresses the CCM
// would publish for the instance, and a DNS SAN only when it is one of the
// instance's names.
func (e *Evaluator) checkNames(_ context.Context, r *request) (Decision, error) {
	addrs, err := e.addresses(r.server)
	if err != nil {
		// The cloud's answer is unusable: not a reason to deny, nor to approve.
		return Decision{}, fmt.Errorf("addresses of instance %s: %w", r.server.ID, err)
	}
	r.addresses = addrs
	ips := map[netip.Addr]bool{}
	var names []string
	var reported []string
	for _, a := range addrs {
		reported = append(reported, a.Address)
		switch a.Type {
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				ips[ip.Unmap()] = true
			}
		case corev1.NodeHostName:
			names = append(names, a.Address)
		}
	}
	for _, sanIP := range r.cr.IPAddresses {
		ip, ok := netip.AddrFromSlice(sanIP)
		if !ok || !ips[ip.Unmap()] {
			return deny(ReasonIPNotOfInstance, "IP SAN %s is not an address of instance %s (id %s); the cloud reports [%s]",
				sanIP, r.server.Name, r.server.ID, strings.Join(reported, ", "))
		}
	}
	allowed := e.allowedDNSNames(r.nodeName, r.server.Name, names)
	for _, name := range r.cr.DNSNames {
		if !slices.Contains(allowed, strings.ToLower(name)) {
			return deny(ReasonDNSNameNotOfInstance, "DNS SAN %q is not a name of node %s or instance %s (id %s); allowed: [%s]",
				name, r.nodeName, r.server.Name, r.server.ID, strings.Join(allowed, ", "))
		}
	}
	return cont()
}

func (e *Evaluator) addresses(srv *openstack.Server) ([]corev1.NodeAddress, error) {
	return nodeaddress.For(srv, e.policy.Addresses)
}

// allowedDNSNames is the node name, the server name, the Hostname
// addresses, and each of those with each configured suffix, lower case.
func (e *Evaluator) allowedDNSNames(nodeName, serverName string, hostnames []string) []string {
	var base []string
	for _, n := range append([]string{nodeName, serverName}, hostnames...) {
		n = strings.ToLower(n)
		if n != "" && !slices.Contains(base, n) {
			base = append(base, n)
		}
	}
	out := slices.Clone(base)
	for _, suffix := range e.policy.DNSSuffixes {
		for _, n := range base {
			if fq := n + "." + suffix; !slices.Contains(out, fq) {
				out = append(out, fq)
			}
		}
	}
	return out
}

// checkSubjectAccessReview, when enabled, asks the apiserver whether the
// requestor may create serving certificate requests for itself
// (certificatesigningrequests/selfnodeserver), as clusters that grant that
// per node or group expect.
func (e *Evaluator) checkSubjectAccessReview(ctx context.Context, r *request) (Decision, error) {
	if e.sar == nil {
		return cont()
	}
	spec := r.csr.Spec
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   spec.Username,
		Groups: spec.Groups,
		UID:    spec.UID,
		Extra:  extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group:       "certificates.k8s.io",
			Resource:    "certificatesigningrequests",
			Subresource: "selfnodeserver",
			Verb:        "create",
		},
	}}
	got, err := e.sar.Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return Decision{}, fmt.Errorf("subject access review for %q: %w", spec.Username, err)
	}
	if got.Status.EvaluationError != "" && !got.Status.Denied {
		// The authorizer could not evaluate the request: no verdict.
		return Decision{}, fmt.Errorf("subject access review for %q: %s", spec.Username, got.Status.EvaluationError)
	}
	if !got.Status.Allowed {
		why := got.Status.Reason
		if why == "" {
			why = "no rule allows it"
		}
		return deny(ReasonSARDenied, "%s may not create certificatesigningrequests/selfnodeserver: %s", spec.Username, why)
	}
	return cont()
}
