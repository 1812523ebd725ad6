//go:build e2e

package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

// The lab's registry: plain HTTP on an address of its own.
const (
	registryIP   = "198.18.253.1"
	registryHost = registryIP + ":5000"
)

// startRegistry runs distribution's registry on registryHost with storage
// in the test's temp dir until the test ends.
func startRegistry(t *testing.T) *registry {
	t.Helper()
	if err := framework.AddAddress(registryIP); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: %s
  secret: lab-only-upload-state-secret
`, filepath.Join(dir, "data"), registryHost)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The lab has no collector to export traces to.
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	p := framework.StartProcessForTest(t, dir, "registry", framework.Tool(t, "registry"), "serve", conf)
	r := &registry{base: "http://" + registryHost, client: &http.Client{Timeout: 30 * time.Second}}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if done, err := p.Exited(); done {
			return false, fmt.Errorf("registry exited: %w\n%s", err, p.Tail(20))
		}
		resp, err := r.client.Get(r.base + "/v2/")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("registry on %s: %v", registryHost, err)
	}
	return r
}

// registry is a minimal client of the OCI distribution API, written here
// rather than borrowed from the tool under test, that checks every digest
// it is served.
type registry struct {
	base   string
	client *http.Client
}

const (
	ociIndex    = "application/vnd.oci.image.index.v1+json"
	ociManifest = "application/vnd.oci.image.manifest.v1+json"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type manifest struct {
	MediaType   string            `json:"mediaType"`
	Manifests   []descriptor      `json:"manifests"` // an index
	Config      descriptor        `json:"config"`    // an image manifest
	Layers      []descriptor      `json:"layers"`
	Annotations map[string]string `json:"annotations"`
}

type imageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

func (r *registry) get(path, accept string) ([]byte, http.Header, error) {
	req, err := http.NewRequest(http.MethodGet, r.base+path, nil)
	if err != nil {
		return nil, nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, bytes.TrimSpace(body))
	}
	return body, resp.Header, nil
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// manifest fetches repo's manifest by tag or digest and returns it with
// its digest, checking the bytes against the digest asked for or served.
func (r *registry) manifest(repo, ref string) (manifest, string, error) {
	var m manifest
	body, h, err := r.get("/v2/"+repo+"/manifests/"+ref, ociIndex+", "+ociManifest)
	if err != nil {
		return m, "", err
	}
	d := digestOf(body)
	if want := h.Get("Docker-Content-Digest"); want != "" && want != d {
		return m, "", fmt.Errorf("%s:%s served as %s but its bytes hash to %s", repo, ref, want, d)
	}
	if strings.HasPrefix(ref, "sha256:") && ref != d {
		return m, "", fmt.Errorf("%s@%s: bytes hash to %s", repo, ref, d)
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return m, "", fmt.Errorf("%s:%s: %w", repo, ref, err)
	}
	return m, d, nil
}

func (r *registry) blob(repo string, desc descriptor) ([]byte, error) {
	body, _, err := r.get("/v2/"+repo+"/blobs/"+desc.Digest, "")
	if err != nil {
		return nil, err
	}
	if d := digestOf(body); d != desc.Digest || int64(len(body)) != desc.Size {
		return nil, fmt.Errorf("blob %s of %s: %d bytes hashing to %s, want %d", desc.Digest, repo, len(body), d, desc.Size)
	}
	return body, nil
}

// catalog lists the registry's repositories.
func (r *registry) catalog() ([]string, error) {
	body, _, err := r.get("/v2/_catalog", "")
	if err != nil {
		return nil, err
	}
	var c struct {
		Repositories []string `json:"repositories"`
	}
	return c.Repositories, json.Unmarshal(body, &c)
}

// unpack extracts an image's gzip tar layers in order into dir. Only
// directories and regular files are expected (the images are built from
// nothing else); anything else, or a path leaving dir, fails.
func (r *registry) unpack(repo string, m manifest, dir string) error {
	for _, l := range m.Layers {
		blob, err := r.blob(repo, l)
		if err != nil {
			return err
		}
		zr, err := gzip.NewReader(bytes.NewReader(blob))
		if err != nil {
			return fmt.Errorf("layer %s: %w", l.Digest, err)
		}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("layer %s: %w", l.Digest, err)
			}
			target := filepath.Join(dir, h.Name)
			if !strings.HasPrefix(target, filepath.Clean(dir)+string(filepath.Separator)) {
				return fmt.Errorf("layer %s: entry %q leaves the root", l.Digest, h.Name)
			}
			switch h.Typeflag {
			case tar.TypeDir:
				err = os.MkdirAll(target, 0o755)
			case tar.TypeReg:
				var data []byte
				if data, err = io.ReadAll(tr); err == nil {
					if err = os.MkdirAll(filepath.Dir(target), 0o755); err == nil {
						err = os.WriteFile(target, data, os.FileMode(h.Mode)&0o777|0o600)
					}
				}
			default:
				err = fmt.Errorf("unexpected entry %q of type %q", h.Name, h.Typeflag)
			}
			if err != nil {
				return fmt.Errorf("layer %s: %w", l.Digest, err)
			}
		}
	}
	return nil
}
