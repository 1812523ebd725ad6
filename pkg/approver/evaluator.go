package approver

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/netip"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/openstack"
)

// Cloud finds the instance behind a node and what Neutron says it owns:
// the approver's only question to the cloud.
type Cloud interface {
	// InstanceForNode returns the instance with providerID when it is not
	// empty, else the instance whose server name is exactly nodeName, as
	// read after this call was made, with what Neutron says the server owns
	// (the ports of the cluster's project, the floating IPs on them and
	// their networks, for nodeaddress.Trusted). ips are the addresses the
	// request asks for: floating IPs need not be read when every one of
	// them is a fixed IP of the server's ports. A server that does not
	// exist is openstack.ErrNotFound; several servers of that name are
	// openstack.ErrAmbiguous; any other error means "could not tell".
	InstanceForNode(ctx context.Context, providerID, nodeName string, ips []netip.Addr) (*Instance, error)
}

// NodeGetter returns the Node of that name, or (nil, nil) when there is
// none. An error means the apiserver (or cache) could not tell.
type NodeGetter func(ctx context.Context, name string) (*corev1.Node, error)

// SubjectAccessReviewer creates a SubjectAccessReview; the typed client's
// SubjectAccessReviews() satisfies it.
type SubjectAccessReviewer interface {
	Create(ctx context.Context, sar *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// Policy is what an operator configures about the decisions themselves.
type Policy struct {
	// DNSSuffixes allow the DNS SAN <name>.<suffix> for the node and server
	// names (no leading dot needed).
	DNSSuffixes []string
	// MaxExpiration caps spec.expirationSeconds; zero means
	// DefaultMaxExpiration.
	MaxExpiration time.Duration
	// Addresses shapes the instance's addresses exactly as the CCM does.
	Addresses nodeaddress.Options
	// ProjectID is the cluster's project (the cloud.conf's, or its token's
	// scope): an instance of another project is denied, and only its ports
	// and floating IPs are trusted. Empty: not checked (tests only; Run
	// always sets it).
	ProjectID string
	// NetworkIDs, when set, are the only networks whose fixed IPs are
	// trusted (--trusted-network-id); otherwise the CCM's network names and
	// the networks' ownership decide.
	NetworkIDs []string
	// AllowAccessIPs trusts accessIPv4/v6, which any project member can set
	// (--allow-access-ips).
	AllowAccessIPs bool
	// ServiceCIDRs are never certified, nor are loopback, link-local,
	// multicast and unspecified addresses. ControlPlaneEndpoints are
	// addresses no node owns (a VIP, a load balancer's address): certified
	// for no node. A node's own cloud-verified address is certified for it
	// even when listed here (a kubeadm control-plane host's advertise
	// address is its node IP), and the listing is reported once.
	ServiceCIDRs          []netip.Prefix
	ControlPlaneEndpoints []netip.Addr
}

// Evaluator runs the ordered checks over one request. It never writes
// anything; the Controller acts on its Decision.
type Evaluator struct {
	cloud  Cloud
	nodes  NodeGetter
	sar    SubjectAccessReviewer
	policy Policy
	checks []namedCheck
}

type checkFunc func(ctx context.Context, r *request) (Decision, error)

type namedCheck struct {
	name string
	fn   checkFunc
}

// request is one CSR under evaluation; checks fill it in as they go.
type request struct {
	csr      *certificatesv1.CertificateSigningRequest
	nodeName string
	cr       *x509.CertificateRequest
	node     *corev1.Node // nil when the Node does not exist (yet)
	instance *Instance
	server   *openstack.Server // instance.Server

	lookup string // how the server was found, for messages
	// addresses are the instance's addresses as nodeaddress computes them.
	addresses []corev1.NodeAddress
	// trust is which of them the cloud controls.
	trust nodeaddress.Trust
	// warnings are misconfigurations found on the way.
	warnings []Warning
}

// NewEvaluator returns an Evaluator. nodes nil finds no Node (every request
// then waits for one); sar nil disables the SubjectAccessReview check.
func NewEvaluator(cloud Cloud, nodes NodeGetter, sar SubjectAccessReviewer, policy Policy) *Evaluator {
	if nodes == nil {
		nodes = func(context.Context, string) (*corev1.Node, error) { return nil, nil }
	}
	e := &Evaluator{cloud: cloud, nodes: nodes, sar: sar, policy: normalizePolicy(policy)}
	e.checks = []namedCheck{
		{"signer", checkSigner},
		{"requestor", checkRequestor},
		{"usages", checkUsages},
		{"subject-alt-names", e.checkSANs},
		{"forbidden-ips", e.checkForbiddenIPs},
		{"extensions", checkExtensions},
		{"key", checkKey},
		{"expiration", e.checkExpiration},
		{"instance", e.checkInstance},
		{"names", e.checkNames},
		{"subject-access-review", e.checkSubjectAccessReview},
	}
	return e
}

func normalizePolicy(p Policy) Policy {
	p.DNSSuffixes = nodeaddress.NormalizeDNSSuffixes(p.DNSSuffixes)
	return p
}

// Step is the result of one check, for explaining a decision.
type Step struct {
	Check    string
	Decision Decision
	Err      error
}

// Evaluate runs the checks in order and returns the first decision that is
// not Continue, or Approve when all pass. An error means the request could
// not be decided now and must be retried; the Decision is then meaningless.
func (e *Evaluator) Evaluate(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) (Decision, error) {
	return e.evaluate(ctx, csr, nil)
}

// Explain is Evaluate that also returns every check that ran, in order.
func (e *Evaluator) Explain(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) ([]Step, Decision, error) {
	var steps []Step
	d, err := e.evaluate(ctx, csr, func(s Step) { steps = append(steps, s) })
	return steps, d, err
}

func (e *Evaluator) evaluate(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, trace func(Step)) (Decision, error) {
	if csr == nil {
		return Decision{}, fmt.Errorf("evaluate: no request")
	}
	r := &request{csr: csr}
	for _, c := range e.checks {
		d, err := c.fn(ctx, r)
		if trace != nil {
			trace(Step{Check: c.name, Decision: d, Err: err})
		}
		if err != nil {
			return Decision{}, fmt.Errorf("check %s: %w", c.name, err)
		}
		if d.Verdict != Continue {
			return d, nil
		}
	}
	return Decision{Verdict: Approve, Reason: ReasonVerified, Message: verifiedMessage(r), Warnings: r.warnings}, nil
}

func verifiedMessage(r *request) string {
	var ips, dns []string
	for _, ip := range r.cr.IPAddresses {
		ips = append(ips, ip.String())
	}
	dns = append(dns, r.cr.DNSNames...)
	return fmt.Sprintf("verified against instance %s (id %s, status %s, found by %s): IP SANs [%s] and DNS SANs [%s] are the instance's; requestor, usages and key checked",
		r.server.Name, r.server.ID, r.server.Status, r.lookup, strings.Join(ips, ", "), strings.Join(dns, ", "))
}
