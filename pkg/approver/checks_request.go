package approver

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"

	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/pki"
)

// The checks in this file look at the request alone; none calls anything.

const (
	nodeUserPrefix = "system:node:"
	nodesGroup     = "system:nodes"
)

// checkSigner ignores every request that is not for kubelet serving
// certificates: those are someone else's to decide.
func checkSigner(_ context.Context, r *request) (Decision, error) {
	if r.csr.Spec.SignerName != certificatesv1.KubeletServingSignerName {
		return Decision{Verdict: Ignore, Reason: reasonOtherSigner,
			Message: fmt.Sprintf("signer %q is not %s", r.csr.Spec.SignerName, certificatesv1.KubeletServingSignerName)}, nil
	}
	return cont()
}

// checkRequestor makes sure a node asks for itself: the authenticated user
// is system:node:<name> in group system:nodes, and the request's subject
// names that same user in organization system:nodes and nothing else.
func checkRequestor(_ context.Context, r *request) (Decision, error) {
	user := r.csr.Spec.Username
	name, ok := strings.CutPrefix(user, nodeUserPrefix)
	if !ok || name == "" {
		return deny(ReasonNotNodeRequestor, "requestor %q is not a node (want %s<node name>)", user, nodeUserPrefix)
	}
	if !slices.Contains(r.csr.Spec.Groups, nodesGroup) {
		return deny(ReasonNotNodeRequestor, "requestor %q is not in group %s (groups %v)", user, nodesGroup, r.csr.Spec.Groups)
	}
	r.nodeName = name
	if n := len(r.csr.Spec.Request); n > maxRequestBytes {
		return tooLarge(n)
	}
	cr, err := parseCSR(r.csr.Spec.Request)
	if err != nil {
		return deny(ReasonInvalidRequest, "spec.request is not a valid certificate request: %v", err)
	}
	r.cr = cr
	if cr.Subject.CommonName != user {
		return deny(ReasonSubjectMismatch, "subject CN %q is not the requestor %q", cr.Subject.CommonName, user)
	}
	if !slices.Equal(cr.Subject.Organization, []string{nodesGroup}) {
		return deny(ReasonSubjectMismatch, "subject O %q is not exactly [%s]", cr.Subject.Organization, nodesGroup)
	}
	// A kubelet's subject is CN and O only; kube-controller-manager's
	// signer copies the request's subject whole (an OU=system:masters too).
	for _, atv := range cr.Subject.Names {
		if !atv.Type.Equal(oidCommonName) && !atv.Type.Equal(oidOrganization) {
			return deny(ReasonSubjectMismatch, "subject %q has attribute %s=%v; a kubelet's subject is CN and O only", cr.Subject, atv.Type, atv.Value)
		}
	}
	return cont()
}

// parseCSR decodes one PEM "CERTIFICATE REQUEST" block and checks that the
// request is signed by the key it carries.
func parseCSR(data []byte) (*x509.CertificateRequest, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	if block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("PEM block is %q, not CERTIFICATE REQUEST", block.Type)
	}
	if more, _ := pem.Decode(rest); more != nil {
		return nil, errors.New("more than one PEM block")
	}
	cr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if err := cr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	return cr, nil
}

// checkUsages allows exactly the two usage sets a kubelet asks for; key
// encipherment only makes sense (and is only allowed) for an RSA key.
func checkUsages(_ context.Context, r *request) (Decision, error) {
	got := map[certificatesv1.KeyUsage]bool{}
	for _, u := range r.csr.Spec.Usages {
		got[u] = true
	}
	base := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	withKE := append(slices.Clone(base), certificatesv1.UsageKeyEncipherment)
	setIs := func(want []certificatesv1.KeyUsage) bool {
		if len(got) != len(want) {
			return false
		}
		for _, u := range want {
			if !got[u] {
				return false
			}
		}
		return true
	}
	switch {
	case setIs(base):
		return cont()
	case setIs(withKE):
		if _, isRSA := r.cr.PublicKey.(*rsa.PublicKey); !isRSA {
			return deny(ReasonDisallowedUsages, "usage %q requested with a %s key; it is only allowed with RSA", certificatesv1.UsageKeyEncipherment, keyKind(r.cr.PublicKey))
		}
		return cont()
	}
	return deny(ReasonDisallowedUsages, "usages %q are not exactly [digital signature, server auth] or [digital signature, key encipherment, server auth]", r.csr.Spec.Usages)
}

// checkSANs allows IP and DNS SANs only, at least one IP, and no DNS name a
// node could use to impersonate anything but itself.
func (e *Evaluator) checkSANs(_ context.Context, r *request) (Decision, error) {
	// A node has a few names and addresses; every SAN is checked and named
	// in the approval message, so their number is capped before anything
	// else, and a repeated one (which every check would pass) is refused.
	if n := len(r.cr.DNSNames) + len(r.cr.IPAddresses) + len(r.cr.EmailAddresses) + len(r.cr.URIs); n > maxSANs {
		return deny(ReasonTooManySANs, "the request has %d SANs; a node has far fewer names and addresses, and at most %d are allowed", n, maxSANs)
	}
	seen := make(map[string]bool, len(r.cr.DNSNames)+len(r.cr.IPAddresses))
	for _, name := range r.cr.DNSNames {
		k := "dns:" + nodeaddress.ASCIILower(name)
		if seen[k] {
			return deny(ReasonTooManySANs, "DNS SAN %q is requested more than once", name)
		}
		seen[k] = true
	}
	for _, ip := range r.cr.IPAddresses {
		k := "ip:" + ip.String()
		if seen[k] {
			return deny(ReasonTooManySANs, "IP SAN %s is requested more than once", ip)
		}
		seen[k] = true
	}
	if len(r.cr.EmailAddresses) > 0 {
		return deny(ReasonDisallowedSAN, "email SAN %q is not allowed in a serving certificate", r.cr.EmailAddresses[0])
	}
	if len(r.cr.URIs) > 0 {
		return deny(ReasonDisallowedSAN, "URI SAN %q is not allowed in a serving certificate", r.cr.URIs[0].String())
	}
	for _, name := range r.cr.DNSNames {
		lower := nodeaddress.ASCIILower(name)
		if strings.Contains(lower, "*") {
			return deny(ReasonForbiddenDNSName, "DNS SAN %q is a wildcard", name)
		}
		if strings.HasPrefix(lower, "kubernetes") && !e.ownKubernetesName(lower, r.nodeName) {
			return deny(ReasonForbiddenDNSName, "DNS SAN %q is a kubernetes* name (the cluster's API service) and not the node's own name", name)
		}
	}
	if len(r.cr.IPAddresses) == 0 {
		return deny(ReasonNoIPSAN, "no IP SAN requested (DNS SANs %q); a kubelet serving certificate needs the node's IP", r.cr.DNSNames)
	}
	return cont()
}

// ownKubernetesName reports whether a kubernetes* DNS name is allowed: only
// as the node's own name (clusters named like kubernetes-worker-1 exist),
// never as kubernetes or kubernetes.<anything>, which clients inside the
// cluster resolve to the API server.
func (e *Evaluator) ownKubernetesName(lower, nodeName string) bool {
	if lower == "kubernetes" || strings.HasPrefix(lower, "kubernetes.") {
		return false
	}
	node := nodeaddress.ASCIILower(nodeName)
	if lower == node {
		return true
	}
	for _, suffix := range e.policy.DNSSuffixes {
		if lower == node+"."+suffix {
			return true
		}
	}
	return false
}

var (
	oidCommonName       = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidOrganization     = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidBasicConstraints = asn1.ObjectIdentifier{2, 5, 29, 19}
	oidNameConstraints  = asn1.ObjectIdentifier{2, 5, 29, 30}
)

// checkExtensions refuses requests that ask to be a CA. The signer ignores
// such extensions, but a request carrying them is not a kubelet's.
func checkExtensions(_ context.Context, r *request) (Decision, error) {
	for _, ext := range r.cr.Extensions {
		switch {
		case ext.Id.Equal(oidBasicConstraints):
			var bc struct {
				IsCA       bool `asn1:"optional"`
				MaxPathLen int  `asn1:"optional,default:-1"`
			}
			if _, err := asn1.Unmarshal(ext.Value, &bc); err == nil && bc.IsCA {
				return deny(ReasonCARequested, "the request asks for basic constraints CA:true")
			}
			return deny(ReasonCARequested, "the request carries a basic constraints extension; a serving certificate must not")
		case ext.Id.Equal(oidNameConstraints):
			return deny(ReasonCARequested, "the request carries a name constraints extension (a CA extension)")
		}
	}
	return cont()
}

// checkKey allows RSA of at least 2048 bits, ECDSA on P-256 or P-384 and
// Ed25519.
func checkKey(_ context.Context, r *request) (Decision, error) {
	switch k := r.cr.PublicKey.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return deny(ReasonWeakKey, "RSA key of %d bits; at least 2048 required", k.N.BitLen())
		}
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return deny(ReasonWeakKey, "ECDSA curve %s; P-256 or P-384 required", k.Curve.Params().Name)
		}
	case ed25519.PublicKey:
	default:
		return deny(ReasonWeakKey, "%s key is not allowed (RSA >= 2048, ECDSA P-256/P-384 or Ed25519)", keyKind(k))
	}
	return cont()
}

func keyKind(k any) string {
	switch k.(type) {
	case *rsa.PublicKey:
		return "RSA"
	case *ecdsa.PublicKey:
		return "ECDSA"
	case ed25519.PublicKey:
		return "Ed25519"
	}
	return fmt.Sprintf("%T", k)
}

// maxSANs caps the SANs of a request: a node's names (node, server,
// hostnames, each with a few DNS suffixes) and addresses (a few ports, two
// families, floating IPs) are far fewer.
const maxSANs = 64

// DefaultMaxExpiration is the longest spec.expirationSeconds approved when
// Policy.MaxExpiration is zero: the built-in signer's lifetime
// (pki.DefaultServingCertLifetime, see there for why). Kubelets do not set
// spec.expirationSeconds, so with kube-controller-manager signing their
// certificates last --cluster-signing-duration (bootstrap/README.md); a
// request that asks for longer than this is not a kubelet's default one.
const DefaultMaxExpiration = pki.DefaultServingCertLifetime

// checkExpiration caps the lifetime a request may ask for.
func (e *Evaluator) checkExpiration(_ context.Context, r *request) (Decision, error) {
	es := r.csr.Spec.ExpirationSeconds
	if es == nil {
		return cont()
	}
	limit := e.policy.MaxExpiration
	if limit <= 0 {
		limit = DefaultMaxExpiration
	}
	if asked := time.Duration(*es) * time.Second; asked > limit {
		return deny(ReasonExpirationTooLong, "spec.expirationSeconds %d (%s) is over the maximum %s (--max-expiration)", *es, asked, limit)
	}
	return cont()
}
