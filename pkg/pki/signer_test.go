package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/cloudflare/cfssl/helpers"
)

func testCSR(t *testing.T, cn string, ips []string, dns []string, client bool) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: []string{"system:nodes", "system:masters"},
		OrganizationalUnit: []string{"system:masters"}, Country: []string{"XX"}, Locality: []string{"anywhere"}}, DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	if client {
		// The request also asks for client auth (extKeyUsage clientAuth).
		eku, err := asn1.Marshal([]asn1.ObjectIdentifier{{1, 3, 6, 1, 5, 5, 7, 3, 2}})
		if err != nil {
			t.Fatal(err)
		}
		tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 37}, Value: eku})
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestServingSignerIssuesExactlyTheApproval(t *testing.T) {
	dir := t.TempDir()
	if _, err := Init(InitOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	ca, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServingSigner(ca, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The request asks for more than was approved: another IP, a DNS name,
	// system:masters as O and as OU, a country, a locality and client auth.
	// Only the approval is issued.
	req := testCSR(t, "system:node:web-1", []string{"10.0.0.5", "10.96.0.1"}, []string{"kubernetes.default"}, true)
	certPEM, err := s.Sign(Approved{CSR: req, CommonName: "system:node:web-1", Organization: "system:nodes", IPs: []string{"10.0.0.5"}, DNSNames: []string{"web-1"}})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := helpers.ParseCertificatePEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "10.0.0.5", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("issued certificate does not verify against the kubelet-serving CA for 10.0.0.5: %v", err)
	}
	if err := cert.VerifyHostname("10.96.0.1"); err == nil {
		t.Error("the certificate is valid for 10.96.0.1, which was requested but not approved")
	}
	if !slices.Equal(cert.DNSNames, []string{"web-1"}) || cert.Subject.CommonName != "system:node:web-1" || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("DNS %v, subject %v; want exactly the approval", cert.DNSNames, cert.Subject)
	}
	if len(cert.Subject.OrganizationalUnit)+len(cert.Subject.Country)+len(cert.Subject.Locality) > 0 || cert.Subject.String() != "CN=system:node:web-1,O=system:nodes" {
		t.Errorf("subject %q carries fields of the request beyond the approved CN and O", cert.Subject)
	}
	if cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign != 0 || !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("IsCA %v, key usage %v, ext %v; want a server-auth leaf", cert.IsCA, cert.KeyUsage, cert.ExtKeyUsage)
	}
	if life := time.Until(cert.NotAfter); life < 47*time.Hour || life > 48*time.Hour+time.Minute {
		t.Errorf("valid for %s more, want the 48-hour default", life)
	}

	short, err := s.Sign(Approved{CSR: req, CommonName: "system:node:web-1", Organization: "system:nodes", IPs: []string{"10.0.0.5"}, MaxLifetime: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := helpers.ParseCertificatePEM(short)
	if life := time.Until(c2.NotAfter); life > 2*time.Hour+time.Minute {
		t.Errorf("spec.expirationSeconds of 2h gave %s", life)
	}
	if _, err := s.Sign(Approved{CSR: req, CommonName: "system:node:web-1", Organization: "system:nodes"}); err == nil {
		t.Error("signed a request with no approved IP")
	}
	if _, err := NewServingSigner(ca, time.Minute); err == nil {
		t.Error("a one-minute lifetime was accepted")
	}
}
