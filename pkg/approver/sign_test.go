package approver

import (
	"context"
	"crypto/x509"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/cloudflare/cfssl/helpers"

	"github.com/stackward/stackward/pkg/pki"
)

// flakySigner fails its first n signings, then signs with the real signer.
type flakySigner struct {
	mu   sync.Mutex
	fail int
	real *pki.ServingSigner
}

func (f *flakySigner) Sign(a pki.Approved) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 {
		f.fail--
		return nil, errors.New("HSM busy")
	}
	return f.real.Sign(a)
}

func waitCertificate(t *testing.T, client kubernetes.Interface, name string) *x509.Certificate {
	t.Helper()
	var pemBytes []byte
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		csr, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pemBytes = csr.Status.Certificate
		return len(pemBytes) > 0, nil
	})
	if err != nil {
		t.Fatalf("CSR %s got no certificate: %v", name, err)
	}
	cert, err := helpers.ParseCertificatePEM(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestTheBuiltInSignerIssuesWhatWasApprovedAndRetriesAFailedSigning(t *testing.T) {
	dir := t.TempDir()
	if _, err := pki.Init(pki.InitOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	real, err := pki.NewServingSigner(ca, 0)
	if err != nil {
		t.Fatal(err)
	}
	signer := &flakySigner{fail: 1, real: real}
	good := makeCSR(t, csrSpec{name: "good", node: "node-a", ips: []string{"10.0.0.10"}, dns: []string{"node-a"}})
	stolen := makeCSR(t, csrSpec{name: "stolen", node: "node-a", ips: []string{"10.0.0.11"}})
	client, _ := startController(t, testCloud(), Options{Policy: testPolicy, Signer: signer}, good, stolen)

	cert := waitCertificate(t, client, "good")
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "10.0.0.10", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("issued certificate does not verify against the kubelet-serving CA: %v", err)
	}
	if !slices.Equal(cert.DNSNames, []string{"node-a"}) || cert.Subject.CommonName != "system:node:node-a" {
		t.Errorf("certificate for %v / %s", cert.DNSNames, cert.Subject.CommonName)
	}
	if life := time.Until(cert.NotAfter); life > 30*24*time.Hour+time.Hour {
		t.Errorf("certificate valid for %s, want at most the 30-day default", life)
	}
	if c := waitCondition(t, client, "good"); c.Type != certificatesv1.CertificateApproved {
		t.Errorf("good: %+v, want Approved", c)
	}
	waitEvent(t, client, "good", reasonSignFailed) // the first signing failed, and was retried
	if c := waitCondition(t, client, "stolen"); c.Type != certificatesv1.CertificateDenied {
		t.Errorf("stolen: %+v, want Denied", c)
	}
	got, err := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "stolen", metav1.GetOptions{})
	if err != nil || len(got.Status.Certificate) > 0 {
		t.Errorf("a denied request was signed (%v)", err)
	}
}
