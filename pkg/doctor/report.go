// Package doctor is `stackward doctor`: the first thing an operator runs when
// a node will not become Ready. It reads a cluster's Nodes and kubelet
// serving certificate requests, finds the nodes the CCM has not initialized,
// the requests nobody decided, those stackward-approver denied and those
// approved but never signed, asks the cloud what it knows of each such node
// (through the same lookup and address rules as the CCM and the approver),
// and says what to do about each finding. It changes nothing.
package doctor

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/openstack"
)

// Kind names a finding.
type Kind string

const (
	// NodeUninitialized: the Node still carries the CCM's uninitialized taint.
	NodeUninitialized Kind = "NodeUninitialized"
	// NodeNotReady: an initialized Node whose Ready condition is not True.
	NodeNotReady Kind = "NodeNotReady"
	// ServingCSRPending: a kubelet-serving request nobody has decided.
	ServingCSRPending Kind = "ServingCSRPending"
	// ServingCSRDenied: a denied kubelet-serving request with no later
	// approved one from the same node.
	ServingCSRDenied Kind = "ServingCSRDenied"
	// ServingCSRNotIssued: approved, but no certificate after IssueGrace.
	ServingCSRNotIssued Kind = "ServingCSRNotIssued"
)

const (
	// UninitializedTaint is set by the kubelet with --cloud-provider=external
	// and removed by the CCM.
	UninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"
	// providedNodeIPAnnotation records the kubelet's --node-ip for the CCM.
	providedNodeIPAnnotation = "alpha.kubernetes.io/provided-node-ip"
	nodeUserPrefix           = "system:node:"
)

// Grace periods under which a state is normal, not a finding worth a hint.
const (
	PendingGrace = 30 * time.Second
	IssueGrace   = time.Minute
)

// Report is the whole diagnosis.
type Report struct {
	Time time.Time `json:"time"`
	// Cloud says which cloud was asked, or why none was.
	Cloud string `json:"cloud"`
	// CloudError is set when the cloud could not be reached at all.
	CloudError string `json:"cloudError,omitempty"`

	Nodes              int `json:"nodes"`
	UninitializedNodes int `json:"uninitializedNodes"`
	NotReadyNodes      int `json:"notReadyNodes"`
	ServingCSRs        int `json:"servingCSRs"`
	PendingCSRs        int `json:"pendingCSRs"`
	DeniedCSRs         int `json:"deniedCSRs"`

	// Problems has one entry per node with findings, by node name.
	Problems []NodeProblems `json:"problems"`

	// ServingCA is each copy of the kubelet-serving CA found (a file on
	// this host, the chart signer's Secret) and when it expires.
	ServingCA       []CAStatus `json:"servingCA,omitempty"`
	CAExpiryWarning string     `json:"caExpiryWarning,omitempty"`

	// StuckLoadBalancers are the cluster's load balancers Octavia has
	// left PENDING_* for longer than StuckAfter; LoadBalancerError says
	// why they could not be listed.
	StuckLoadBalancers []StuckLoadBalancer `json:"stuckLoadBalancers,omitempty"`
	LoadBalancerError  string              `json:"loadBalancerError,omitempty"`
}

// Findings counts the findings of every node.
func (r *Report) Findings() int {
	n := 0
	for _, p := range r.Problems {
		n += len(p.Findings)
	}
	for _, ca := range r.ServingCA {
		if ca.Problem() {
			n++
		}
	}
	return n + len(r.StuckLoadBalancers)
}

// Problem returns the entry of the named node, or nil.
func (r *Report) Problem(node string) *NodeProblems {
	for i := range r.Problems {
		if r.Problems[i].Node == node {
			return &r.Problems[i]
		}
	}
	return nil
}

// NodeProblems is what is wrong with one node, and what the cloud says of it.
type NodeProblems struct {
	Node string `json:"node"`
	// Registered is false when only CSRs name the node.
	Registered bool       `json:"registered"`
	ProviderID string     `json:"providerID,omitempty"`
	NodeIP     string     `json:"nodeIP,omitempty"` // the kubelet's --node-ip
	Cloud      *CloudView `json:"cloud,omitempty"`
	Findings   []Finding  `json:"findings"`
}

// Finding is one thing to act on.
type Finding struct {
	Kind  Kind      `json:"kind"`
	Since time.Time `json:"since"`
	Age   string    `json:"age"`
	// CSR names the request, for the CSR kinds.
	CSR string `json:"csr,omitempty"`
	// Reason and Message are the CSR condition's (or why the node is not Ready).
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Requested are the names and IPs the request asks for.
	Requested []string `json:"requested,omitempty"`
	// EarlierDenials counts the node's older denied requests, not listed.
	EarlierDenials int    `json:"earlierDenials,omitempty"`
	Hint           string `json:"hint"`
}

// CloudView is what the cloud answered about a node's server.
type CloudView struct {
	// Lookup says how the server was looked for.
	Lookup    string               `json:"lookup"`
	Found     bool                 `json:"found"`
	NotFound  bool                 `json:"notFound,omitempty"`
	Error     string               `json:"error,omitempty"`
	ServerID  string               `json:"serverID,omitempty"`
	Name      string               `json:"name,omitempty"`
	Status    string               `json:"status,omitempty"`
	Flavor    string               `json:"flavor,omitempty"`
	Zone      string               `json:"zone,omitempty"`
	Addresses []corev1.NodeAddress `json:"addresses,omitempty"`
}

// hasIP reports whether the cloud gives the server ip.
func (v *CloudView) hasIP(ip string) bool {
	for _, a := range v.Addresses {
		if a.Type != corev1.NodeHostName && a.Address == ip {
			return true
		}
	}
	return false
}

// Cloud is the cloud side of a diagnosis; nil Compute means none configured.
type Cloud struct {
	Compute openstack.Compute
	// LoadBalancers lists Octavia's load balancers; nil: the cloud has
	// no load-balancer endpoint.
	LoadBalancers LoadBalancerLister
	// Trunks, when set, adds the subports of trunks on a server's ports to
	// its addresses, as the CCM does.
	Trunks    *openstack.TrunkCache
	Region    string
	Addresses nodeaddress.Options
}

// Inputs are the cluster's state at Now.
type Inputs struct {
	Nodes []corev1.Node
	CSRs  []certificatesv1.CertificateSigningRequest
	Cloud *Cloud
	Now   time.Time
}

// Diagnose builds the report. It asks the cloud once per node with findings.
func Diagnose(ctx context.Context, in Inputs) *Report {
	r := &Report{Time: in.Now, Nodes: len(in.Nodes)}
	problems := map[string]*NodeProblems{}
	nodes := map[string]*corev1.Node{}
	problem := func(name string) *NodeProblems {
		if p := problems[name]; p != nil {
			return p
		}
		p := &NodeProblems{Node: name}
		if n := nodes[name]; n != nil {
			p.Registered, p.ProviderID = true, n.Spec.ProviderID
			p.NodeIP = n.Annotations[providedNodeIPAnnotation]
		}
		problems[name] = p
		return p
	}
	for i := range in.Nodes {
		nodes[in.Nodes[i].Name] = &in.Nodes[i]
	}
	for i := range in.Nodes {
		n := &in.Nodes[i]
		switch {
		case hasTaint(n, UninitializedTaint):
			r.UninitializedNodes++
			problem(n.Name).Findings = append(problem(n.Name).Findings, Finding{Kind: NodeUninitialized, Since: n.CreationTimestamp.Time})
		case !isReady(n):
			r.NotReadyNodes++
			f := Finding{Kind: NodeNotReady, Since: n.CreationTimestamp.Time}
			if c := readyCondition(n); c != nil {
				f.Since, f.Reason, f.Message = c.LastTransitionTime.Time, c.Reason, c.Message
			}
			problem(n.Name).Findings = append(problem(n.Name).Findings, f)
		}
	}
	for _, c := range servingCSRsByNode(in.CSRs) {
		r.ServingCSRs++
		f, ok := csrFinding(c.csr, c.newestApproved, in.Now)
		switch f.Kind {
		case ServingCSRPending:
			r.PendingCSRs++
		case ServingCSRDenied:
			r.DeniedCSRs++
		}
		if ok {
			p := problem(c.node)
			p.Findings = addCSRFinding(p.Findings, f)
		}
	}

	switch {
	case in.Cloud == nil || in.Cloud.Compute == nil:
		r.Cloud = "not asked (no --cloud-config)"
	default:
		r.Cloud = "asked"
		if in.Cloud.Region != "" {
			r.Cloud = "asked (region " + in.Cloud.Region + ")"
		}
	}
	names := make([]string, 0, len(problems))
	for name := range problems {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := problems[name]
		if in.Cloud != nil && in.Cloud.Compute != nil {
			p.Cloud = lookup(ctx, in.Cloud, p.ProviderID, name)
		}
		for i := range p.Findings {
			f := &p.Findings[i]
			f.Age = age(in.Now, f.Since)
			f.Hint = hint(p, f, in.Now)
		}
		r.Problems = append(r.Problems, *p)
	}
	return r
}

// addCSRFinding appends f, except that a node's denials are one finding: the
// newest, counting the earlier ones (a denied kubelet keeps asking).
func addCSRFinding(fs []Finding, f Finding) []Finding {
	if f.Kind != ServingCSRDenied {
		return append(fs, f)
	}
	for i := range fs {
		if fs[i].Kind != ServingCSRDenied {
			continue
		}
		if f.Since.After(fs[i].Since) {
			f.EarlierDenials = fs[i].EarlierDenials + 1
			fs[i] = f
		} else {
			fs[i].EarlierDenials++
		}
		return fs
	}
	return append(fs, f)
}

type nodeCSR struct {
	node           string
	csr            *certificatesv1.CertificateSigningRequest
	newestApproved time.Time // of the node's approved requests
}

// servingCSRsByNode keeps the kubelet-serving requests of node users
// (system:node:<name>), with the time of each node's newest approved request.
func servingCSRsByNode(csrs []certificatesv1.CertificateSigningRequest) []nodeCSR {
	approved := map[string]time.Time{}
	var out []nodeCSR
	for i := range csrs {
		c := &csrs[i]
		if c.Spec.SignerName != certificatesv1.KubeletServingSignerName {
			continue
		}
		node, ok := strings.CutPrefix(c.Spec.Username, nodeUserPrefix)
		if !ok || node == "" {
			// Not a kubelet's: the approver denies it, and it says
			// nothing about why a node is not Ready.
			continue
		}
		if condition(c, certificatesv1.CertificateApproved) != nil && c.CreationTimestamp.After(approved[node]) {
			approved[node] = c.CreationTimestamp.Time
		}
		out = append(out, nodeCSR{node: node, csr: c})
	}
	for i := range out {
		out[i].newestApproved = approved[out[i].node]
	}
	return out
}

// csrFinding classifies one request; ok is false when it needs no action.
func csrFinding(c *certificatesv1.CertificateSigningRequest, newestApproved, now time.Time) (Finding, bool) {
	f := Finding{CSR: c.Name, Since: c.CreationTimestamp.Time, Requested: requested(c)}
	if d := condition(c, certificatesv1.CertificateDenied); d != nil {
		f.Kind, f.Reason, f.Message = ServingCSRDenied, d.Reason, d.Message
		f.Since = d.LastUpdateTime.Time
		if f.Since.IsZero() {
			f.Since = c.CreationTimestamp.Time
		}
		// A later request of the node was approved: history, not a problem.
		return f, !newestApproved.After(c.CreationTimestamp.Time)
	}
	if fc := condition(c, certificatesv1.CertificateFailed); fc != nil {
		f.Kind, f.Reason, f.Message = ServingCSRNotIssued, fc.Reason, fc.Message
		return f, true
	}
	if a := condition(c, certificatesv1.CertificateApproved); a != nil {
		f.Kind, f.Reason, f.Message = ServingCSRNotIssued, a.Reason, a.Message
		if !a.LastUpdateTime.IsZero() {
			f.Since = a.LastUpdateTime.Time
		}
		return f, len(c.Status.Certificate) == 0 && now.Sub(f.Since) >= IssueGrace
	}
	f.Kind = ServingCSRPending
	return f, true
}

// requested lists the request's DNS names and IPs, "" when unparsable.
func requested(c *certificatesv1.CertificateSigningRequest) []string {
	block, _ := pem.Decode(c.Spec.Request)
	if block == nil {
		return nil
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range req.DNSNames {
		out = append(out, "DNS:"+d)
	}
	for _, ip := range req.IPAddresses {
		out = append(out, "IP:"+ip.String())
	}
	return out
}

// lookup asks the cloud for the node's server as the CCM and the approver
// do: by providerID, else by exact name; addresses by the shared rules.
func lookup(ctx context.Context, cloud *Cloud, providerID, name string) *CloudView {
	v := &CloudView{Lookup: "name " + name}
	if providerID != "" {
		v.Lookup = "providerID " + providerID
		region, _, err := openstack.ParseProviderID(providerID)
		if err != nil {
			v.Error = err.Error()
			return v
		}
		if region != "" && cloud.Region != "" && region != cloud.Region {
			v.Error = fmt.Sprintf("providerID is in region %q, the cloud config's region is %q", region, cloud.Region)
			return v
		}
	}
	srv, err := openstack.ServerForNode(ctx, cloud.Compute, providerID, name)
	switch {
	case openstack.IsNotFound(err):
		v.NotFound = true
		return v
	case err != nil:
		v.Error = err.Error()
		if errors.Is(err, openstack.ErrAmbiguous) {
			v.Error = "several servers have this name: " + err.Error()
		}
		return v
	}
	v.Found = true
	v.ServerID, v.Name, v.Status, v.Flavor, v.Zone = srv.ID, srv.Name, srv.Status, srv.FlavorName, srv.AvailabilityZone
	view := nodeaddress.CloudView{Server: srv}
	if cloud.Trunks != nil {
		t, err := cloud.Trunks.OfServer(ctx, srv.ID)
		if err != nil {
			v.Error = err.Error()
			return v
		}
		view.Ports, view.Trunks, view.Subports, view.Networks = t.Ports, t.Trunks, t.Subports, t.Networks
	}
	addrs, err := nodeaddress.ForView(view, cloud.Addresses)
	if err != nil {
		v.Error = err.Error()
	}
	v.Addresses = addrs
	return v
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func isReady(n *corev1.Node) bool {
	c := readyCondition(n)
	return c != nil && c.Status == corev1.ConditionTrue
}

func condition(c *certificatesv1.CertificateSigningRequest, typ certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequestCondition {
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].Type == typ && c.Status.Conditions[i].Status == corev1.ConditionTrue {
			return &c.Status.Conditions[i]
		}
	}
	return nil
}
