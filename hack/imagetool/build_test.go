package main

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// fakeBins writes a distinct "binary" per image and platform.
func fakeBins(t *testing.T, images ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range Platforms {
		pd := filepath.Join(dir, p.OS+"_"+p.Architecture)
		if err := os.MkdirAll(pd, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, img := range images {
			if err := os.WriteFile(filepath.Join(pd, img), []byte("#!"+img+" for "+p.Architecture), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func options(t *testing.T, bins string) BuildOptions {
	return BuildOptions{
		BinDir: bins, OutDir: t.TempDir(), Images: []string{"stackward-ccm", "stackward-approver"},
		Version: "v1.2.3", Revision: "0123456789abcdef", Source: "https://example.com/stackward",
		Created: time.Unix(1700000000, 0).UTC(),
	}
}

func digests(t *testing.T, o BuildOptions) map[string]v1.Hash {
	t.Helper()
	built, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	d := map[string]v1.Hash{}
	for _, b := range built {
		// The digest on disk is the one reported.
		idx, err := readLayout(b.Layout)
		if err != nil {
			t.Fatal(err)
		}
		onDisk, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if onDisk != b.Digest {
			t.Errorf("%s: layout holds %s, Build reported %s", b.Name, onDisk, b.Digest)
		}
		d[b.Name] = b.Digest
	}
	return d
}

func TestSameInputsGiveSameDigests(t *testing.T) {
	bins := fakeBins(t, "stackward-ccm", "stackward-approver")
	first := digests(t, options(t, bins))
	// A different output directory and a later wall clock change nothing.
	time.Sleep(1100 * time.Millisecond)
	second := digests(t, options(t, bins))
	for name, d := range first {
		if second[name] != d {
			t.Errorf("%s: %s, then %s from the same inputs", name, d, second[name])
		}
	}
	if first["stackward-ccm"] == first["stackward-approver"] {
		t.Errorf("both images have digest %s", first["stackward-ccm"])
	}

	changed := options(t, bins)
	changed.Version = "v1.2.4"
	if d := digests(t, changed); d["stackward-ccm"] == first["stackward-ccm"] {
		t.Errorf("another version gave the same digest %s", d["stackward-ccm"])
	}
}

func TestImagesRunAsNonrootWithTheirBinary(t *testing.T) {
	o := options(t, fakeBins(t, "stackward-ccm", "stackward-approver"))
	if _, err := Build(o); err != nil {
		t.Fatal(err)
	}
	idx, err := readLayout(filepath.Join(o.OutDir, "stackward-approver"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != len(Platforms) {
		t.Fatalf("%d manifests, want one per platform %v", len(m.Manifests), Platforms)
	}
	if got := m.Annotations["org.opencontainers.image.version"]; got != "v1.2.3" {
		t.Errorf("index annotation version %q", got)
	}
	for i, desc := range m.Manifests {
		p := Platforms[i]
		if desc.Platform == nil || desc.Platform.Architecture != p.Architecture || desc.Platform.OS != "linux" {
			t.Errorf("manifest %d platform %+v, want %+v", i, desc.Platform, p)
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != p.Architecture || cf.Config.User != "65532:65532" ||
			strings.Join(cf.Config.Entrypoint, " ") != "/usr/local/bin/stackward-approver" {
			t.Errorf("%s config: arch %s user %q entrypoint %q", p.Architecture, cf.Architecture, cf.Config.User, cf.Config.Entrypoint)
		}
		for k, want := range map[string]string{
			"org.opencontainers.image.version":  "v1.2.3",
			"org.opencontainers.image.revision": "0123456789abcdef",
			"org.opencontainers.image.licenses": "Apache-2.0",
			"org.opencontainers.image.source":   "https://example.com/stackward",
			"org.opencontainers.image.created":  "2023-11-14T22:13:20Z",
		} {
			if cf.Config.Labels[k] != want {
				t.Errorf("label %s = %q, want %q", k, cf.Config.Labels[k], want)
			}
		}
		files := flatten(t, img)
		if got := string(files["usr/local/bin/stackward-approver"]); got != "#!stackward-approver for "+p.Architecture {
			t.Errorf("%s binary is %q", p.Architecture, got)
		}
		if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") {
			t.Errorf("etc/passwd:\n%s", files["etc/passwd"])
		}
		if _, ok := files["bin/sh"]; ok {
			t.Error("the image has a shell")
		}
		pool, n := x509.NewCertPool(), 0
		for rest := files[CABundlePath]; ; n++ {
			var block *pem.Block
			if block, rest = pem.Decode(rest); block == nil {
				break
			}
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatalf("%s: %v", CABundlePath, err)
			}
			pool.AddCert(c)
		}
		if n < 100 {
			t.Errorf("%s holds %d certificates, want the Mozilla root store (over 100)", CABundlePath, n)
		}
	}
}

// flatten is the image's filesystem: path → contents (directories empty),
// checking every entry's ownership and time on the way.
func flatten(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		prev := ""
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Name <= prev {
				t.Errorf("tar entry %s after %s: entries must be sorted", h.Name, prev)
			}
			prev = h.Name
			if !h.ModTime.Equal(time.Unix(1700000000, 0)) {
				t.Errorf("%s mtime %v", h.Name, h.ModTime)
			}
			var buf bytes.Buffer
			if _, err := io.Copy(&buf, tr); err != nil {
				t.Fatal(err)
			}
			files[h.Name] = buf.Bytes()
		}
		rc.Close()
	}
	return files
}
