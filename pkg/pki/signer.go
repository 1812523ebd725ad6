package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/cloudflare/cfssl/config"
	"github.com/cloudflare/cfssl/csr"
	"github.com/cloudflare/cfssl/helpers"
	"github.com/cloudflare/cfssl/signer"
	"github.com/cloudflare/cfssl/signer/local"
)

// DefaultServingCertLifetime is the built-in signer's default: 48 hours.
// A serving certificate names IPs, and when its server is deleted Neutron
// may give those IPs to another server at once; until the certificate
// expires, whoever kept its key can answer as the kubelet at that address
// (the apiserver checks the IP, not the Node). No lifetime closes that
// window to zero, so it is kept to two days: the certificate of a deleted
// server is dead two days later at most, while the kubelet, which rotates
// at 70-90 % of the lifetime (34-43 h), still has 5-14 hours to get the
// next one approved through an approver or cloud outage. It is also the
// approver's default --max-expiration.
const DefaultServingCertLifetime = 48 * time.Hour

// ServingSigner issues kubelet serving certificates with the kubelet-serving
// CA through cfssl's local signer. The signing profile enforces the policy
// again at signing time, whatever the request asks for: digital signature
// and server auth only, not a CA, the subject's CN and O as approved and no
// other subject field (an OU or a second O the request carries is not
// copied), and exactly the approved SANs (the request's own SANs are not copied; a name
// whitelist admits only the approved ones).
type ServingSigner struct {
	ca       *CA
	lifetime time.Duration
}

// NewServingSigner returns a signer over ca issuing certificates valid for
// lifetime (DefaultServingCertLifetime when zero).
func NewServingSigner(ca *CA, lifetime time.Duration) (*ServingSigner, error) {
	quietCFSSL()
	if ca == nil {
		return nil, errors.New("serving signer: no CA")
	}
	if lifetime == 0 {
		lifetime = DefaultServingCertLifetime
	}
	if lifetime < time.Hour {
		return nil, fmt.Errorf("serving signer: certificate lifetime %s is shorter than an hour", lifetime)
	}
	return &ServingSigner{ca: ca, lifetime: lifetime}, nil
}

// Approved is what the approver verified about one request.
type Approved struct {
	// CSR is the PEM certificate request.
	CSR []byte
	// CommonName and Organization are the approved subject.
	CommonName   string
	Organization string
	// IPs and DNSNames are exactly the approved SANs.
	IPs, DNSNames []string
	// MaxLifetime, when > 0, caps the lifetime (spec.expirationSeconds).
	MaxLifetime time.Duration
}

// Sign issues the certificate (PEM) for an approved request.
func (s *ServingSigner) Sign(a Approved) ([]byte, error) {
	if len(a.IPs) == 0 {
		return nil, errors.New("sign: no approved IP")
	}
	lifetime := s.lifetime
	if a.MaxLifetime > 0 && a.MaxLifetime < lifetime {
		lifetime = a.MaxLifetime
	}
	hosts := append(append([]string{}, a.IPs...), a.DNSNames...)
	names := append([]string{a.CommonName}, hosts...)
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	whitelist := regexp.MustCompile("^(" + strings.Join(quoted, "|") + ")$")
	profile := &config.SigningProfile{
		Usage:        []string{"digital signature", "server auth"},
		Expiry:       lifetime,
		ExpiryString: lifetime.String(),
		Backdate:     5 * time.Minute,
		CAConstraint: config.CAConstraint{IsCA: false},
		// Subject is not copied: the issued subject is built from the
		// approved CN and O alone (cfssl fills only empty fields from the
		// request, so copying it would keep e.g. OU=system:masters).
		CSRWhitelist:  &config.CSRWhitelist{PublicKeyAlgorithm: true, PublicKey: true, SignatureAlgorithm: true},
		NameWhitelist: whitelist,
	}
	policy := &config.Signing{Profiles: map[string]*config.SigningProfile{}, Default: profile}
	ls, err := local.NewSigner(s.ca.Key, s.ca.Cert, signer.DefaultSigAlgo(s.ca.Key), policy)
	if err != nil {
		return nil, fmt.Errorf("sign: cfssl local signer: %w", err)
	}
	certPEM, err := ls.Sign(signer.SignRequest{
		Hosts:   hosts,
		Request: string(a.CSR),
		Subject: &signer.Subject{CN: a.CommonName, Names: []csr.Name{{O: a.Organization}}},
	})
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	// Belt and braces: what was issued is what was approved.
	cert, err := helpers.ParseCertificatePEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("sign: parse issued certificate: %w", err)
	}
	if err := checkIssued(cert, a); err != nil {
		return nil, fmt.Errorf("sign: issued certificate does not match the approval: %w", err)
	}
	return certPEM, nil
}

func checkIssued(cert *x509.Certificate, a Approved) error {
	if cert.IsCA {
		return errors.New("is a CA")
	}
	if len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		return fmt.Errorf("extended key usages %v", cert.ExtKeyUsage)
	}
	var ips []string
	for _, ip := range cert.IPAddresses {
		ips = append(ips, ip.String())
	}
	if strings.Join(ips, ",") != strings.Join(a.IPs, ",") || strings.Join(cert.DNSNames, ",") != strings.Join(a.DNSNames, ",") {
		return fmt.Errorf("SANs %v %v, approved %v %v", ips, cert.DNSNames, a.IPs, a.DNSNames)
	}
	if len(cert.EmailAddresses)+len(cert.URIs) > 0 {
		return errors.New("email or URI SANs")
	}
	want := pkix.Name{CommonName: a.CommonName, Organization: []string{a.Organization}}
	if cert.Subject.String() != want.String() {
		return fmt.Errorf("subject %q, approved %q", cert.Subject, want)
	}
	return nil
}
