//go:build e2e && bench

package bench

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/stackward/stackward/e2e/framework"
)

// The upstream CCM is built (cached) before entering the lab: the versus
// benchmarks run it beside Stackward.
func TestMain(m *testing.M) { framework.UpstreamCCMMain(m) }

var (
	reportOnce sync.Once
	theReport  *Report
)

// report is the run's report, written to STACKWARD_BENCH_REPORT
// (default bin/bench.json).
func report() *Report {
	reportOnce.Do(func() {
		path := os.Getenv("STACKWARD_BENCH_REPORT")
		if path == "" {
			path = filepath.Join(framework.RepoRoot(), "bin", "bench.json")
		}
		_ = os.MkdirAll(filepath.Dir(path), 0o755)
		theReport = NewReport(path, map[string]any{"cpus": runtime.NumCPU(), "go": runtime.Version()})
	})
	return theReport
}

func put(t *testing.T, name string, figures any) {
	t.Helper()
	if err := report().Put(name, figures); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %+v", name, figures)
}

// nodeIdentity is a client certificate for system:node:<name>, signed by
// the cluster CA as kube-controller-manager would sign a kubelet's, so a
// thousand lightweight nodes need no thousand bootstraps.
type nodeIdentity struct {
	ca     *x509.Certificate
	caKey  any
	caPEM  []byte
	server string
}

func newNodeIdentity(cp *framework.ControlPlane) (*nodeIdentity, error) {
	keyPEM, err := os.ReadFile(filepath.Join(framework.KubernetesDir, "pki", "ca.key"))
	if err != nil {
		return nil, err
	}
	kb, _ := pem.Decode(keyPEM)
	cb, _ := pem.Decode(cp.CACert)
	if kb == nil || cb == nil {
		return nil, fmt.Errorf("cluster CA: no PEM")
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKCS1PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("cluster CA key: %w", err)
	}
	return &nodeIdentity{ca: ca, caKey: key, caPEM: cp.CACert, server: cp.Server}, nil
}

func (id *nodeIdentity) config(name string) (*rest.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, id.ca, &key.PublicKey, id.caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host: id.server, QPS: 50, Burst: 100,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   id.caPEM,
			CertData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			KeyData:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		},
	}, nil
}

func pemCSR(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}
