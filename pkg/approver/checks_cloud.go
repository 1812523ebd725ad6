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
// providerID when it has one, else by exact server name (a node asking
// before the CCM initialized it). The Node must exist: a kubelet registers
// its Node before its serving certificate can name the Node's addresses, so
// a request with no Node is not a joining kubelet's but, say, a bootstrap
// token's holder naming a project server that is no node. It is left
// pending (not denied: the kubelet's registration may merely be late) and
// looked at again when the Node appears.
func (e *Evaluator) checkInstance(ctx context.Context, r *request) (Decision, error) {
	if d, bad := checkASCII("node name", r.nodeName); bad {
		return d, nil
	}
	node, err := e.nodes(ctx, r.nodeName)
	if err != nil {
		return Decision{}, fmt.Errorf("get node %q: %w", r.nodeName, err)
	}
	r.node = node
	switch {
	case node == nil:
		return Decision{Verdict: Wait, Reason: ReasonNodeNotRegistered, Message: fmt.Sprintf(
			"no Node %s exists: a kubelet registers its Node before it asks for a serving certificate; left pending until the Node is registered", r.nodeName)}, nil
	case node.DeletionTimestamp != nil:
		return Decision{Verdict: Wait, Reason: ReasonNodeNotRegistered, Message: fmt.Sprintf(
			"Node %s is being deleted; left pending until it is registered again", r.nodeName)}, nil
	}
	providerID := node.Spec.ProviderID
	if providerID != "" {
		r.lookup = fmt.Sprintf("provider ID %s", providerID)
	} else {
		r.lookup = fmt.Sprintf("name %q", r.nodeName)
	}
	var ips []netip.Addr
	for _, sanIP := range r.cr.IPAddresses {
		if ip, ok := netip.AddrFromSlice(sanIP); ok {
			ips = append(ips, ip.Unmap())
		}
	}
	inst, err := e.cloud.InstanceForNode(ctx, providerID, r.nodeName, ips)
	switch {
	case errors.Is(err, openstack.ErrNotFound):
		if providerID != "" {
			return deny(ReasonInstanceNotFound, "no instance with provider ID %s (Node %s) in the cloud: %v", providerID, r.nodeName, err)
		}
		return deny(ReasonInstanceNotFound, "no instance named %q in the cloud", r.nodeName)
	case errors.Is(err, openstack.ErrInvalidProviderID):
		return deny(ReasonInvalidProviderID, "Node %s has provider ID %q, which is not an instance of this cloud: %v", r.nodeName, providerID, err)
	case errors.Is(err, openstack.ErrAmbiguous):
		// Not a denial: the node may be a legitimate one whose name a second
		// server shares for a while (a replacement being built, a mistake).
		// It waits until an operator renames one or the CCM sets the Node's
		// providerID, which makes the lookup exact.
		return Decision{Verdict: Wait, Reason: ReasonInstanceAmbiguous, Message: fmt.Sprintf(
			"several instances are named %q in the cloud and Node %s has no provider ID yet; cannot tell which one is the node. Rename the other server or set the Node's provider ID; left pending until then", r.nodeName, r.nodeName)}, nil
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
	// With credentials that see other projects (an admin's), a providerID
	// may point at another project's server: never the cluster's node.
	if p := e.policy.ProjectID; p != "" && srv.TenantID != p {
		return deny(ReasonInstanceOtherProject, "instance %s (id %s) found by %s belongs to project %q, not the cluster's project %q",
			srv.Name, srv.ID, r.lookup, srv.TenantID, p)
	}
	if d, bad := checkASCII("instance name", srv.Name); bad {
		return d, nil
	}
	// The kubelet writes the Node's providerID itself when it registers, so
	// a node could point at another node's instance. It may only vouch for
	// an instance that carries its own name.
	if !e.isNodeNameOf(r.nodeName, srv.Name) {
		return deny(ReasonInstanceNameMismatch, "node %s found instance %s (id %s) by %s, but the instance is named %q",
			r.nodeName, srv.Name, srv.ID, r.lookup, srv.Name)
	}
	if being := beingDeleted(srv); being != "" {
		// Still ACTIVE while Nova tears it down: its addresses are about to
		// be freed and reused, so a certificate for them must not outlive it.
		return deny(ReasonInstanceDeleted, "instance %s (id %s) of node %s is being deleted (%s)", srv.Name, srv.ID, r.nodeName, being)
	}
	if slices.Contains(notRunning, srv.Status) {
		return Decision{Verdict: Wait, Reason: ReasonInstanceNotRunning, Message: fmt.Sprintf(
			"instance %s (id %s) of node %s has %s; left pending until it runs", srv.Name, srv.ID, r.nodeName, describeNotRunning(srv.Status))}, nil
	}
	return cont()
}

// isNodeNameOf is the node-name binding shared with the CCM.
func (e *Evaluator) isNodeNameOf(nodeName, serverName string) bool {
	return nodeaddress.IsNodeNameOf(nodeName, serverName, e.policy.DNSSuffixes)
}

// checkNames accepts an IP SAN only when it is one of the addresses the
// cloud controls for the instance (nodeaddress.Trusted: a subset of what the
// CCM publishes), and a DNS SAN only when it is one of the instance's names.
func (e *Evaluator) checkNames(ctx context.Context, r *request) (Decision, error) {
	switch {
	case r.instance.OwnershipErr != nil:
		return Decision{}, fmt.Errorf("ports and floating IPs of instance %s: %w", r.server.ID, r.instance.OwnershipErr)
	case r.instance.Ownership == nil:
		return Decision{}, fmt.Errorf("ports and floating IPs of instance %s: the cloud lookup did not read them", r.server.ID)
	}
	view := *r.instance.Ownership
	view.Server = r.server
	trust, err := nodeaddress.Trusted(view, e.policy.trustOptions())
	if err != nil {
		// The cloud's answer is unusable: not a reason to deny, nor to approve.
		return Decision{}, fmt.Errorf("addresses of instance %s: %w", r.server.ID, err)
	}
	r.trust = trust
	r.addresses = trust.Published
	var names, reported, trusted []string
	for _, a := range trust.Published {
		reported = append(reported, a.Address)
		if a.Type == corev1.NodeHostName {
			names = append(names, a.Address)
		}
	}
	for _, ip := range trust.Trusted {
		trusted = append(trusted, ip.String())
	}
	var notReady []string // IP SANs that may become trusted without anyone acting
	for _, sanIP := range r.cr.IPAddresses {
		ip, ok := netip.AddrFromSlice(sanIP)
		if !ok {
			return deny(ReasonInvalidRequest, "IP SAN %v is not an IP address", sanIP)
		}
		ip = ip.Unmap()
		cpEndpoint := e.policy.controlPlaneEndpoint(ip)
		if trust.IsTrusted(ip) {
			if cpEndpoint {
				r.warnings = append(r.warnings, Warning{Reason: ReasonControlPlaneEndpointIsNodeAddress, Message: fmt.Sprintf(
					"--control-plane-endpoint %s is node %s's own address (a fixed IP or floating IP of instance %s, id %s, verified against the cloud), so it is certified for that node; "+
						"list only addresses no node owns (a VIP, a load balancer's address) and remove %s from approver.controlPlaneEndpoints",
					ip, r.nodeName, r.server.Name, r.server.ID, ip)})
			}
			continue
		}
		if cpEndpoint {
			return deny(ReasonForbiddenIP, "IP SAN %s is a control-plane endpoint (--control-plane-endpoint), an address no node owns, and not an address of instance %s (id %s); trusted addresses [%s]",
				ip, r.server.Name, r.server.ID, strings.Join(trusted, ", "))
		}
		if why, later := trust.NotReady[ip]; later {
			notReady = append(notReady, fmt.Sprintf("%s (%s)", ip, why))
			continue
		}
		if why, seen := trust.Untrusted[ip]; seen {
			return deny(ReasonUntrustedAddress, "IP SAN %s is reported for instance %s (id %s) but not trusted: %s; trusted addresses [%s]",
				ip, r.server.Name, r.server.ID, why, strings.Join(trusted, ", "))
		}
		return deny(ReasonIPNotOfInstance, "IP SAN %s is not an address of instance %s (id %s); the cloud reports [%s]",
			ip, r.server.Name, r.server.ID, strings.Join(reported, ", "))
	}
	allowed := e.allowedDNSNames(r.nodeName, r.server.Name, names)
	for _, name := range r.cr.DNSNames {
		if !slices.Contains(allowed, nodeaddress.ASCIILower(name)) {
			return deny(ReasonDNSNameNotOfInstance, "DNS SAN %q is not a name of node %s or instance %s (id %s); allowed: [%s]",
				name, r.nodeName, r.server.Name, r.server.ID, strings.Join(allowed, ", "))
		}
	}
	if len(notReady) > 0 {
		// Every other SAN passed: only a port's status stands between the
		// request and its approval, which a cloud outage can cause and only
		// time can tell apart from a port that never comes up.
		return Decision{Verdict: Wait, Reason: ReasonAddressNotReady, Message: fmt.Sprintf(
			"IP SAN %s of instance %s (id %s) cannot be verified yet; left pending until the port is ACTIVE (never approved while it is not); trusted addresses [%s]",
			strings.Join(notReady, ", "), r.server.Name, r.server.ID, strings.Join(trusted, ", "))}, nil
	}
	return cont()
}

// allowedDNSNames is the node name, the server name, the Hostname
// addresses, and each of those with each configured suffix, lower case.
func (e *Evaluator) allowedDNSNames(nodeName, serverName string, hostnames []string) []string {
	var base []string
	for _, n := range append([]string{nodeName, serverName}, hostnames...) {
		n = nodeaddress.ASCIILower(n)
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
