package pki

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTrustBundle(t *testing.T) {
	dir := t.TempDir()
	if _, err := Init(InitOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	cur, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, certs, err := TrustBundle(dir)
	if err != nil || len(certs) != 1 || !certs[0].Equal(cur.Cert) {
		t.Fatalf("without a rotation: %v, %v; want the current CA alone", certs, err)
	}
	res, err := Rotate(RotateOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	bundle, certs, err := TrustBundle(dir)
	if err != nil || len(certs) != 2 || !certs[0].Equal(cur.Cert) || !certs[1].Equal(res.Next.Cert) {
		t.Fatalf("during a rotation: %d certificates, %v; want the current and the next CA once each", len(certs), err)
	}
	if strings.Count(string(bundle), "BEGIN CERTIFICATE") != 2 {
		t.Errorf("bundle:\n%s", bundle)
	}

	// The key of a CA is never a trust anchor.
	if err := os.WriteFile(filepath.Join(dir, BundleFile), readFile(t, filepath.Join(dir, KeyFile)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := TrustBundle(dir); err == nil || !strings.Contains(err.Error(), "not a certificate") {
		t.Errorf("a key in the bundle file: %v", err)
	}
	if _, _, err := TrustBundle(t.TempDir()); err == nil {
		t.Error("no error without kubelet-serving-ca.crt")
	}
}

func TestExportNextCarriesTheNextPairAndTheBundle(t *testing.T) {
	dir := t.TempDir()
	if _, err := Init(InitOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if _, err := ExportNext(dir); err == nil {
		t.Error("ExportNext without a rotation succeeded")
	}
	res, err := Rotate(RotateOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	out, err := ExportNext(dir)
	if err != nil {
		t.Fatal(err)
	}
	mount := t.TempDir()
	if _, err := Import(mount, out, "next.yaml"); err != nil {
		t.Fatal(err)
	}
	if got, err := Load(mount); err != nil || !got.Cert.Equal(res.Next.Cert) {
		t.Errorf("imported %v, %v; want the next CA", got, err)
	}
	for _, m := range []func(string) ([]byte, error){Export, ExportNext} {
		out, err := m(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), BundleFile+":") {
			t.Errorf("export during a rotation lacks %s:\n%s", BundleFile, out)
		}
	}
}
