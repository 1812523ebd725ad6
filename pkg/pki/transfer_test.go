package pki

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// A further control-plane host gets the first host's kubelet-serving CA
// through an exported Secret manifest, never a different one.
func TestExportThenImportCarriesTheCAToAnotherHost(t *testing.T) {
	first := t.TempDir()
	if _, err := Init(InitOptions{Dir: first}); err != nil {
		t.Fatal(err)
	}
	manifest, err := Export(first)
	if err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if _, err := Init(InitOptions{Dir: other}); err != nil {
		t.Fatal(err)
	}
	otherCert := readFile(t, filepath.Join(other, CertFile))
	halfDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(halfDir, KeyFile), []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A manifest whose key belongs to another CA.
	var mixed map[string]any
	if err := yaml.Unmarshal(manifest, &mixed); err != nil {
		t.Fatal(err)
	}
	otherManifest, err := Export(other)
	if err != nil {
		t.Fatal(err)
	}
	var o map[string]any
	if err := yaml.Unmarshal(otherManifest, &o); err != nil {
		t.Fatal(err)
	}
	mixed["data"].(map[string]any)[KeyFile] = o["data"].(map[string]any)[KeyFile]
	mixedManifest, err := yaml.Marshal(mixed)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name        string
		dir         string
		manifest    []byte
		wantCreated bool
		wantErr     string
	}{
		{name: "an empty host gets the CA", dir: filepath.Join(t.TempDir(), "pki"), manifest: manifest, wantCreated: true},
		{name: "the host that exported it keeps its files", dir: first, manifest: manifest},
		{name: "a host with another CA keeps it and is told", dir: other, manifest: manifest, wantErr: "holds another CA"},
		{name: "a host with only a key is not completed", dir: halfDir, manifest: manifest, wantErr: "only one of"},
		{name: "a key of another CA is refused", dir: t.TempDir(), manifest: mixedManifest, wantErr: "is not the key of"},
		{name: "a manifest without the key is refused", dir: t.TempDir(), manifest: []byte("apiVersion: v1\nkind: Secret\ndata:\n  kubelet-serving-ca.crt: eA==\n"), wantErr: "want data keys"},
		{name: "another kind of object is refused", dir: t.TempDir(), manifest: []byte("apiVersion: v1\nkind: ConfigMap\n"), wantErr: "want a Secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := dirContents(t, tc.dir)
			res, err := Import(tc.dir, tc.manifest, "ca.yaml")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if after := dirContents(t, tc.dir); after != before {
					t.Errorf("a refused import changed %s", tc.dir)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Created != tc.wantCreated {
				t.Errorf("Created = %v, want %v", res.Created, tc.wantCreated)
			}
			if !bytes.Equal(readFile(t, res.CertPath), readFile(t, filepath.Join(first, CertFile))) ||
				!bytes.Equal(readFile(t, res.KeyPath), readFile(t, filepath.Join(first, KeyFile))) {
				t.Errorf("%s does not hold the exported CA", tc.dir)
			}
			if fi, err := os.Stat(res.KeyPath); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("key file: %v, mode %v; want 0600", err, fi.Mode().Perm())
			}
		})
	}
	if !bytes.Equal(readFile(t, filepath.Join(other, CertFile)), otherCert) {
		t.Error("the other CA was overwritten")
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dirContents is every file name and content in dir (none if it is absent).
func dirContents(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		b.WriteString(e.Name() + "\n" + string(data) + "\n")
	}
	return b.String()
}
