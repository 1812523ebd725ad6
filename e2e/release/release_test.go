//go:build e2e

package release

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/e2e/framework"
)

const (
	version      = "v0.1.0-e2e.1"
	chartVersion = "0.1.0-e2e.1"
	ns           = framework.ChartNamespace
)

// images are the release's images by the chart's container names.
var images = map[string]string{"ccm": "stackward-ccm", "approver": "stackward-approver"}

// TestReleaseFromRegistry releases this commit into a registry in the lab
// and installs it as an operator would, with nothing built by hand.
func TestReleaseFromRegistry(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	reg := startRegistry(t)
	src, revision := cloneWorkTree(t)
	target := registryHost + "/stackward"
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	helm4 := "HELM=" + framework.Tool(t, "helm4")

	t.Run("make release refuses bad input in one line and pushes nothing", func(t *testing.T) {
		untracked := filepath.Join(src, "untracked.txt")
		for _, tc := range []struct {
			name string
			args []string
			prep func()
			want string
		}{
			{"without REGISTRY", []string{"VERSION=" + version}, nil, "make release: REGISTRY is not set"},
			{"with a version that is not SemVer", []string{"VERSION=1.2", "REGISTRY=" + target}, nil, "is not vMAJOR.MINOR.PATCH"},
			{"with an untracked file", []string{"VERSION=" + version, "REGISTRY=" + target}, func() {
				if err := os.WriteFile(untracked, []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}, "make release: the working tree has uncommitted changes"},
			{"with an unreachable registry", []string{"VERSION=" + version, "REGISTRY=198.18.253.9:5000/stackward", "PLAIN_HTTP=1"}, func() { os.Remove(untracked) },
				"is not usable (above); nothing was pushed"},
		} {
			if tc.prep != nil {
				tc.prep()
			}
			out, err := makeRelease(ctx, t, src, append(tc.args, helm4)...)
			if err == nil {
				t.Errorf("%s: make release succeeded:\n%s", tc.name, out)
				continue
			}
			var lines []string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "make release: ") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Errorf("%s: want one line with %q, got:\n%s", tc.name, tc.want, out)
			}
		}
		if repos, err := reg.catalog(); err != nil || len(repos) != 0 {
			t.Errorf("registry holds %v (%v), want nothing", repos, err)
		}
	})

	start := time.Now()
	out, err := makeRelease(ctx, t, src, "VERSION="+version, "REGISTRY="+target, "PLAIN_HTTP=1", helm4)
	if err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	t.Logf("make release took %v:\n%s", time.Since(start).Round(time.Second), out)
	pushed := pushedDigests(t, out)

	t.Run("make images again gives the digests that were pushed", func(t *testing.T) {
		cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "images", "VERSION="+version)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make images: %v\n%s", err, out)
		}
		for _, image := range images {
			line := regexp.MustCompile(`(?m)^` + image + ` +(sha256:[0-9a-f]{64}) `).FindStringSubmatch(string(out))
			if line == nil || line[1] != pushed[image] {
				t.Errorf("%s: rebuilt as %v, pushed %s:\n%s", image, line, pushed[image], out)
			}
		}
	})

	for _, helm := range []string{"helm3", "helm4"} {
		t.Run("helm install from oci:// with "+helm+" names the release's images", func(t *testing.T) {
			release := "stackward-" + helm
			installFromRegistry(t, helm, release, nil)
			d, err := cp.Admin.AppsV1().DaemonSets(ns).Get(ctx, release, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				if want := target + "/" + images[c.Name] + ":" + version; c.Image != want {
					t.Errorf("container %s image %q, want %q", c.Name, c.Image, want)
				}
			}
			uninstall(t, helm, release)
		})
	}

	// The unpacked images outlive the subtest that unpacks them.
	bins, unpacked := map[string]string{}, t.TempDir()
	imagesOK := t.Run("the images resolve to both architectures, run as 65532 and carry the release's binary", func(t *testing.T) {
		for container, image := range images {
			repo := "stackward/" + image
			idx, digest, err := reg.manifest(repo, version)
			if err != nil {
				t.Fatal(err)
			}
			if digest != pushed[image] {
				t.Errorf("%s:%s is %s, make release pushed %s", repo, version, digest, pushed[image])
			}
			if idx.MediaType != ociIndex {
				t.Errorf("%s: media type %q, want an OCI index", repo, idx.MediaType)
			}
			var arches []string
			for _, desc := range idx.Manifests {
				if desc.Platform == nil || desc.Platform.OS != "linux" {
					t.Errorf("%s: manifest %s has platform %+v", repo, desc.Digest, desc.Platform)
					continue
				}
				arches = append(arches, desc.Platform.Architecture)
				m, _, err := reg.manifest(repo, desc.Digest)
				if err != nil {
					t.Fatal(err)
				}
				cfgBytes, err := reg.blob(repo, m.Config)
				if err != nil {
					t.Fatal(err)
				}
				var cfg imageConfig
				if err := json.Unmarshal(cfgBytes, &cfg); err != nil {
					t.Fatal(err)
				}
				checkConfig(t, image, desc.Platform.Architecture, cfg, revision)
				if m.Annotations["org.opencontainers.image.version"] != version {
					t.Errorf("%s %s: manifest annotations %v", repo, desc.Platform.Architecture, m.Annotations)
				}
				if desc.Platform.Architecture != "amd64" {
					continue
				}
				root := filepath.Join(unpacked, image)
				if err := reg.unpack(repo, m, root); err != nil {
					t.Fatal(err)
				}
				bins[container] = filepath.Join(root, cfg.Config.Entrypoint[0])
				checkRootfs(t, image, root)
			}
			sort.Strings(arches)
			if !slices.Equal(arches, []string{"amd64", "arm64"}) {
				t.Errorf("%s: architectures %v, want amd64 and arm64", repo, arches)
			}
		}
	})
	if !imagesOK {
		return
	}

	t.Run("the entrypoints from the image run and report the release", func(t *testing.T) {
		out, err := exec.Command(bins["ccm"], "--version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "stackward-ccm "+version+" ") {
			t.Errorf("stackward-ccm --version: %v\n%s", err, out)
		}
		out, err = exec.Command(bins["approver"], "--version").CombinedOutput()
		if err != nil || string(out) != "stackward-approver "+version+"\n" {
			t.Errorf("stackward-approver --version: %v\n%s", err, out)
		}
		out, err = exec.Command(bins["approver"], "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "kubelet-serving") {
			t.Errorf("stackward-approver --help: %v\n%s", err, out)
		}
	})

	t.Run("the installed chart's pod runs from the image's binaries", func(t *testing.T) {
		cloud := framework.StartSimCloud(t, framework.SimCloudOptions{})
		conf, err := os.ReadFile(cloud.CloudConf(t, ""))
		if err != nil {
			t.Fatal(err)
		}
		const release = "stackward-run"
		installFromRegistry(t, "helm4", release, map[string]any{
			"cloudConfig": map[string]any{"contents": string(conf)},
			"clusterName": "lab",
			"ccm":         map[string]any{"extraArgs": map[string]any{"node-monitor-period": "2s", "v": 2}},
		})
		t.Cleanup(func() { uninstall(t, "helm4", release) })
		d, err := cp.Admin.AppsV1().DaemonSets(ns).Get(ctx, release, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod := cp.StartPod(ctx, t, ns, d.Spec.Template.Spec, bins)
		pod.WaitReady(ctx, t, cp, ns, "cloud-controller-manager", "stackward-approver")
		if t.Failed() {
			return
		}
		cp.CheckNodeJoins(ctx, t, cloud, "release-node-1", 1)
	})
}

func checkConfig(t *testing.T, image, arch string, cfg imageConfig, revision string) {
	t.Helper()
	if cfg.Architecture != arch || cfg.OS != "linux" {
		t.Errorf("%s %s: config says %s/%s", image, arch, cfg.OS, cfg.Architecture)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("%s %s: user %q, want 65532:65532", image, arch, cfg.Config.User)
	}
	if want := []string{"/usr/local/bin/" + image}; !slices.Equal(cfg.Config.Entrypoint, want) {
		t.Errorf("%s %s: entrypoint %q, want %q", image, arch, cfg.Config.Entrypoint, want)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.title":    image,
	} {
		if got := cfg.Config.Labels[k]; got != want {
			t.Errorf("%s %s: label %s=%q, want %q", image, arch, k, got, want)
		}
	}
	if !strings.HasPrefix(cfg.Config.Labels["org.opencontainers.image.source"], "https://") {
		t.Errorf("%s %s: source label %q", image, arch, cfg.Config.Labels["org.opencontainers.image.source"])
	}
}

// checkRootfs: the user 65532 exists, there is no shell, and the CA bundle
// is there for a Keystone with a public certificate.
func checkRootfs(t *testing.T, image, root string) {
	t.Helper()
	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if err != nil || !bytes.Contains(passwd, []byte("nonroot:x:65532:65532:")) {
		t.Errorf("%s: /etc/passwd (%v):\n%s", image, err, passwd)
	}
	for _, sh := range []string{"bin/sh", "bin/bash", "usr/bin/sh"} {
		if _, err := os.Stat(filepath.Join(root, sh)); err == nil {
			t.Errorf("%s: has a shell /%s", image, sh)
		}
	}
	certs, err := os.ReadFile(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt"))
	if n := bytes.Count(certs, []byte("BEGIN CERTIFICATE")); err != nil || n < 100 {
		t.Errorf("%s: CA bundle holds %d certificates (%v)", image, n, err)
	}
}

// cloneWorkTree clones the repository into a temp dir at a commit of the
// working tree's tracked files (`git stash create`; HEAD when clean), so
// make release sees a clean checkout of what is being tested. It returns
// the clone and that commit.
func cloneWorkTree(t *testing.T) (string, string) {
	t.Helper()
	repo := framework.RepoRoot()
	commit := strings.TrimSpace(git(t, repo, "stash", "create"))
	if commit == "" {
		commit = strings.TrimSpace(git(t, repo, "rev-parse", "HEAD"))
	}
	dir := filepath.Join(t.TempDir(), "src")
	git(t, "", "clone", "--quiet", "--no-checkout", repo, dir)
	git(t, dir, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit)
	return dir, commit
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// makeRelease runs `make release` in dir. The lab has no route out: Go
// builds from the module cache only; credentials and Helm's state stay out
// of the developer's.
func makeRelease(ctx context.Context, t *testing.T, dir string, vars ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "make", append([]string{"--no-print-directory", "release"}, vars...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOTOOLCHAIN=local")
	cmd.Env = append(cmd.Env, helmEnv(t)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func helmEnv(t *testing.T) []string {
	home := t.TempDir()
	return []string{"HOME=" + home, "DOCKER_CONFIG=" + home, "HELM_CACHE_HOME=" + home, "HELM_CONFIG_HOME=" + home, "HELM_DATA_HOME=" + home,
		// HOME moves; Go's caches must not.
		"GOCACHE=" + goEnv(t, "GOCACHE"), "GOMODCACHE=" + goEnv(t, "GOMODCACHE"), "GOPATH=" + goEnv(t, "GOPATH")}
}

func goEnv(t *testing.T, key string) string {
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", key, err)
	}
	return strings.TrimSpace(string(out))
}

var pushedLine = regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(registryHost) + `/stackward/(stackward-[a-z]+):` + regexp.QuoteMeta(version) + `@(sha256:[0-9a-f]{64})$`)

// pushedDigests are the image index digests make release reports.
func pushedDigests(t *testing.T, out string) map[string]string {
	t.Helper()
	d := map[string]string{}
	for _, m := range pushedLine.FindAllStringSubmatch(out, -1) {
		d[m[1]] = m[2]
	}
	for _, image := range images {
		if d[image] == "" {
			t.Fatalf("make release did not report pushing %s:\n%s", image, out)
		}
	}
	return d
}

// installFromRegistry is the README's one line: helm install from oci://
// with no --set for the images.
func installFromRegistry(t *testing.T, helm, release string, values map[string]any) {
	t.Helper()
	if values == nil {
		values = map[string]any{"cloudConfig": map[string]any{"contents": "[Global]\nauth-url = https://keystone.lab.invalid:5000/v3\n"}}
	}
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	data, err := json.Marshal(values) // JSON is YAML
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(valuesFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	runHelm(t, helm, "install", release, fmt.Sprintf("oci://%s/stackward/charts/stackward", registryHost),
		"--version", chartVersion, "--plain-http", "-n", ns, "-f", valuesFile)
}

func uninstall(t *testing.T, helm, release string) {
	runHelm(t, helm, "uninstall", release, "-n", ns)
}

func runHelm(t *testing.T, helm string, args ...string) {
	t.Helper()
	args = append(args, "--kubeconfig", filepath.Join(framework.KubernetesDir, "super-admin.conf"))
	cmd := exec.Command(framework.Tool(t, helm), args...)
	cmd.Env = append(os.Environ(), helmEnv(t)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", helm, strings.Join(args, " "), err, out)
	}
}
