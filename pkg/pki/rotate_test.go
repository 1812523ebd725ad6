package pki

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudflare/cfssl/helpers"
)

func TestRotateRefusesWithoutAUsableCurrentCAAndChangesNothing(t *testing.T) {
	garbled := t.TempDir()
	if _, err := Init(InitOptions{Dir: garbled}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(garbled, CertFile), []byte("not PEM"), 0o644); err != nil {
		t.Fatal(err)
	}
	noKey := t.TempDir()
	if _, err := Init(InitOptions{Dir: noKey}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(noKey, KeyFile)); err != nil {
		t.Fatal(err)
	}
	// Root reads any file whatever its mode, so a directory stands in for
	// a file that cannot be read.
	unreadable := t.TempDir()
	if _, err := Init(InitOptions{Dir: unreadable}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(unreadable, CertFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(unreadable, CertFile), 0o700); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for _, tc := range []struct {
		name, dir, wantFile string
	}{
		{"a directory without a CA names the certificate file", empty, filepath.Join(empty, CertFile)},
		{"an unparsable certificate is named", garbled, filepath.Join(garbled, CertFile)},
		{"a missing key is named", noKey, filepath.Join(noKey, KeyFile)},
		{"an unreadable certificate is named", unreadable, filepath.Join(unreadable, CertFile)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := dirContents(t, tc.dir)
			_, err := Rotate(RotateOptions{Dir: tc.dir})
			if err == nil || !strings.Contains(err.Error(), tc.wantFile) {
				t.Fatalf("err = %v, want it to name %s", err, tc.wantFile)
			}
			if after := dirContents(t, tc.dir); after != before {
				t.Errorf("a refused rotation changed %s", tc.dir)
			}
		})
	}
}

func TestRotateThenFinishMovesToANewCAThroughABundleOfBoth(t *testing.T) {
	dir := t.TempDir()
	if _, err := Init(InitOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	oldCert, oldKey := readFile(t, filepath.Join(dir, CertFile)), readFile(t, filepath.Join(dir, KeyFile))

	res, err := Rotate(RotateOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || bytes.Equal(res.Next.CertPEM, oldCert) {
		t.Fatalf("no new CA: Created %v", res.Created)
	}
	if !bytes.Equal(readFile(t, filepath.Join(dir, CertFile)), oldCert) || !bytes.Equal(readFile(t, filepath.Join(dir, KeyFile)), oldKey) {
		t.Error("rotate changed the current CA; kubelets would stop being verified")
	}
	bundle, err := helpers.ParseCertificatesPEM(readFile(t, res.BundlePath))
	if err != nil || len(bundle) != 2 || !bundle[0].Equal(res.Current.Cert) || !bundle[1].Equal(res.Next.Cert) {
		t.Fatalf("bundle: %d certificates, err %v; want the current and the next CA", len(bundle), err)
	}
	if fi, err := os.Stat(res.NextKeyPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("next key: %v; want mode 0600", err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".rotate-*")); len(leftovers) > 0 {
		t.Errorf("scratch left behind: %v", leftovers)
	}

	again, err := Rotate(RotateOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if again.Created || !again.Next.Cert.Equal(res.Next.Cert) {
		t.Error("a second rotate replaced the next CA that hosts may already have")
	}

	fin, err := Finish(dir)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := Load(dir)
	if err != nil || !cur.Cert.Equal(res.Next.Cert) {
		t.Fatalf("after finish the current CA is not the next one (err %v)", err)
	}
	if !bytes.Equal(readFile(t, fin.OldCertPath), oldCert) || !bytes.Equal(readFile(t, fin.OldKeyPath), oldKey) {
		t.Error("the old CA was not kept beside the new one")
	}
	if b := readFile(t, filepath.Join(dir, BundleFile)); !bytes.Equal(b, res.Next.CertPEM) {
		t.Error("after finish the bundle still trusts the old CA")
	}
	if _, err := Finish(dir); err == nil || !strings.Contains(err.Error(), NextCertFile) {
		t.Errorf("finish without a rotation: err = %v, want it to name %s", err, NextCertFile)
	}
}

func TestExpiresWithin(t *testing.T) {
	dir := t.TempDir()
	res, err := Init(InitOptions{Dir: dir, Lifetime: 30 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	pem := readFile(t, res.CertPath)
	for _, tc := range []struct {
		name      string
		threshold time.Duration
		want      bool
	}{
		{"a CA expiring in 30 days is within 90", 90 * 24 * time.Hour, true},
		{"a CA expiring in 30 days is not within 7", 7 * 24 * time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, notAfter, err := ExpiresWithin(pem, time.Now(), tc.threshold)
			if err != nil || got != tc.want || !notAfter.Equal(res.Cert.NotAfter) {
				t.Errorf("= %v %v %v, want %v %v", got, notAfter, err, tc.want, res.Cert.NotAfter)
			}
		})
	}
}
