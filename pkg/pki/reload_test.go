package pki

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cloudflare/cfssl/helpers"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/klog/v2"
)

// A rotation replaces the CA files (the Secret) under a running approver:
// the signer moves to the new CA without a restart, and keeps signing with
// the one it has when the new files are no CA.
func TestReloadingSignerFollowsTheCAFiles(t *testing.T) {
	dir, next := t.TempDir(), t.TempDir()
	first, err := Init(InitOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	second, err := Init(InitOptions{Dir: next})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, err := NewReloadingSigner(dir, 0, reg, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	req := testCSR(t, "system:node:web-1", []string{"10.0.0.5"}, nil, false)
	approved := Approved{CSR: req, CommonName: "system:node:web-1", Organization: "system:nodes", IPs: []string{"10.0.0.5"}}
	copyCA := func(from string, certPEM []byte) {
		t.Helper()
		if certPEM == nil {
			certPEM = readFile(t, filepath.Join(from, CertFile))
		}
		if err := os.WriteFile(filepath.Join(dir, KeyFile), readFile(t, filepath.Join(from, KeyFile)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, CertFile), certPEM, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	for _, step := range []struct {
		name        string
		change      func()
		wantIssuer  *InitResult
		wantLoaded  float64
		wantInvalid float64
	}{
		{name: "it signs with the CA it started with", wantIssuer: &first},
		{name: "the next signature after the files changed uses the new CA", change: func() { copyCA(next, nil) }, wantIssuer: &second, wantLoaded: 1},
		{name: "unchanged files are not loaded again", wantIssuer: &second, wantLoaded: 1},
		{name: "files that are no CA keep the previous CA", change: func() { copyCA(next, []byte("garbage")) }, wantIssuer: &second, wantLoaded: 1, wantInvalid: 1},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.change != nil {
				step.change()
			}
			certPEM, err := s.Sign(approved)
			if err != nil {
				t.Fatal(err)
			}
			cert, err := helpers.ParseCertificatePEM(certPEM)
			if err != nil {
				t.Fatal(err)
			}
			if err := cert.CheckSignatureFrom(step.wantIssuer.Cert); err != nil {
				t.Errorf("issued by %s, want %s: %v", cert.Issuer, step.wantIssuer.Cert.Subject, err)
			}
			if got := testutil.ToFloat64(s.expiry); got != float64(step.wantIssuer.Cert.NotAfter.Unix()) {
				t.Errorf("expiry metric %v, want the signing CA's %v", got, step.wantIssuer.Cert.NotAfter.Unix())
			}
			if got := testutil.ToFloat64(s.reloads.WithLabelValues("loaded")); got != step.wantLoaded {
				t.Errorf("reloads{loaded} = %v, want %v", got, step.wantLoaded)
			}
			if got := testutil.ToFloat64(s.reloads.WithLabelValues("invalid")); got != step.wantInvalid {
				t.Errorf("reloads{invalid} = %v, want %v", got, step.wantInvalid)
			}
		})
	}
	if _, err := NewReloadingSigner(t.TempDir(), 0, prometheus.NewRegistry(), klog.Background()); err == nil {
		t.Error("a directory without a CA was accepted")
	}
}
