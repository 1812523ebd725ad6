package pki

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestInitCreatesAPathLengthZeroCAWithAPrivateKey(t *testing.T) {
	for _, algo := range []string{KeyECDSA, KeyRSA} {
		t.Run(algo, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "pki")
			res, err := Init(InitOptions{Dir: dir, KeyAlgorithm: algo, Lifetime: 5 * 365 * 24 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Created {
				t.Fatal("a new directory: Created is false")
			}
			c := res.Cert
			if !c.IsCA || c.MaxPathLen != 0 || !c.MaxPathLenZero {
				t.Errorf("IsCA %v MaxPathLen %d MaxPathLenZero %v; want a CA with path length 0", c.IsCA, c.MaxPathLen, c.MaxPathLenZero)
			}
			if life := c.NotAfter.Sub(c.NotBefore); life < 5*365*24*time.Hour-48*time.Hour || life > 5*365*24*time.Hour+48*time.Hour {
				t.Errorf("lifetime %s, want about 5 years", life)
			}
			switch k := c.PublicKey.(type) {
			case *ecdsa.PublicKey:
				if algo != KeyECDSA || k.Curve.Params().BitSize != 256 {
					t.Errorf("ECDSA key of %d bits for %s", k.Curve.Params().BitSize, algo)
				}
			case *rsa.PublicKey:
				if algo != KeyRSA || k.N.BitLen() != 3072 {
					t.Errorf("RSA key of %d bits for %s", k.N.BitLen(), algo)
				}
			}
			info, err := os.Stat(res.KeyPath)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != 0o600 {
				t.Errorf("key mode %v, want 0600", info.Mode().Perm())
			}
			if _, err := Load(dir); err != nil {
				t.Errorf("Load: %v", err)
			}
		})
	}
}

func TestInitIsIdempotentAndNeverOverwritesAKey(t *testing.T) {
	dir := t.TempDir()
	first, err := Init(InitOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := os.ReadFile(first.KeyPath)
	again, err := Init(InitOptions{Dir: dir})
	if err != nil || again.Created {
		t.Fatalf("second init: created %v, %v; want nothing done", again.Created, err)
	}
	if after, _ := os.ReadFile(first.KeyPath); string(after) != string(key) {
		t.Fatal("the second init changed the key")
	}

	// A key without its certificate is never replaced.
	if err := os.Remove(first.CertPath); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(InitOptions{Dir: dir}); err == nil || !strings.Contains(err.Error(), "refusing to overwrite the key") {
		t.Errorf("key without certificate: %v, want a refusal", err)
	}
	if after, _ := os.ReadFile(first.KeyPath); string(after) != string(key) {
		t.Fatal("init changed a key whose certificate was missing")
	}

	// A certificate and a key that do not belong together are refused.
	other := t.TempDir()
	o, err := Init(InitOptions{Dir: other})
	if err != nil {
		t.Fatal(err)
	}
	otherCert, _ := os.ReadFile(o.CertPath)
	if err := os.WriteFile(first.CertPath, otherCert, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(InitOptions{Dir: dir}); err == nil || !strings.Contains(err.Error(), "is not the key of") {
		t.Errorf("mismatched pair: %v, want an error naming the mismatch", err)
	}
}

func TestInitRejectsBadOptions(t *testing.T) {
	if _, err := Init(InitOptions{Dir: t.TempDir(), KeyAlgorithm: "dsa"}); err == nil {
		t.Error("key algorithm dsa accepted")
	}
	if _, err := Init(InitOptions{Dir: t.TempDir(), Lifetime: time.Hour}); err == nil {
		t.Error("a one-hour CA accepted")
	}
}
