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
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/cloudflare/cfssl/helpers"
	"github.com/prometheus/client_golang/prometheus"

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

// testSigner is the built-in signer on a new kubelet-serving CA.
func testSigner(t *testing.T) (*pki.ServingSigner, *pki.CA) {
	t.Helper()
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
	return real, ca
}

func TestTheBuiltInSignerIssuesWhatWasApprovedAndRetriesAFailedSigning(t *testing.T) {
	real, ca := testSigner(t)
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

// countingSigner counts the certificates it issues, per request.
type countingSigner struct {
	mu    sync.Mutex
	real  *pki.ServingSigner
	count map[string]int
}

func (c *countingSigner) Sign(a pki.Approved) ([]byte, error) {
	c.mu.Lock()
	c.count[a.CommonName]++
	c.mu.Unlock()
	return c.real.Sign(a)
}

// TestTheBuiltInSignerIssuesEachCertificateOnce: after the approver signed
// a request, its informer may still show it approved and unsigned (the
// approval's event arrives before the certificate's); that state must not
// be signed and written again, which in a join burst cost a second,
// conflicting write per request.
func TestTheBuiltInSignerIssuesEachCertificateOnce(t *testing.T) {
	real, _ := testSigner(t)
	signer := &countingSigner{real: real, count: map[string]int{}}
	csr := makeCSR(t, csrSpec{name: "a", node: "node-a", ips: []string{"10.0.0.10"}})
	client := fake.NewClientset(csr)
	c, err := NewController(client, testCloud(), Options{Policy: testPolicy, Signer: signer, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(100)
	c.recorder, c.events.recorder = rec, rec
	idx := c.csrInformer.GetIndexer()
	if err := idx.Add(csr); err != nil {
		t.Fatal(err)
	}
	if err := c.nodeFactory.Core().V1().Nodes().Informer().GetIndexer().Add(node("node-a", "")); err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	if err := c.sync(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	issued, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, "a", metav1.GetOptions{})
	if err != nil || len(issued.Status.Certificate) == 0 || !awaitsOurSignature(withoutCertificate(issued)) {
		t.Fatalf("the request was not approved and signed: %v", err)
	}
	// The cache now shows the approval without the certificate.
	if err := idx.Update(withoutCertificate(issued)); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	signer.mu.Lock()
	defer signer.mu.Unlock()
	if n := signer.count["system:node:node-a"]; n != 1 {
		t.Errorf("the request was signed %d times, want once", n)
	}
}

func withoutCertificate(csr *certificatesv1.CertificateSigningRequest) *certificatesv1.CertificateSigningRequest {
	out := csr.DeepCopy()
	out.Status.Certificate = nil
	return out
}
