//go:build e2e

package kubeadm

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/pki"
)

// A second control-plane host joins with bootstrap/'s control-plane join
// configuration as completed by stackward-node, gets kubeadm's shared
// certificates through --upload-certs and the kubelet-serving
// CA with stackward pki import, and kubeadm renders its apiserver and
// kube-controller-manager from the cluster's kubeadm-config ConfigMap: with
// our flags, so every control-plane host verifies and signs kubelet
// serving certificates with the same CA (and `kubeadm upgrade`, which
// renders from the same ConfigMap, keeps them).
func TestSecondControlPlaneHostGetsTheServingCAAndOurFlags(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{})
	const hostIndex = 40
	hostIP := framework.NodeIP(hostIndex)
	cloud.CreateServer(t, "cp-2", hostIndex, "m1.large", "az-2")
	if err := framework.AddAddress(hostIP); err != nil {
		t.Fatal(err)
	}
	bins := buildBinaries(t, "stackward-node", "stackward")
	kubeadm := framework.Tool(t, "kubeadm")
	work := t.TempDir()

	// The first host: what `kubeadm init` uploads, and the CA exported.
	cfgPath := filepath.Join(cp.Dir, "kubeadm.yaml")
	if out, err := exec.Command(kubeadm, "init", "phase", "upload-config", "all", "--config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("kubeadm init phase upload-config: %v\n%s", err, out)
	}
	key, err := exec.Command(kubeadm, "certs", "certificate-key").Output()
	if err != nil {
		t.Fatalf("kubeadm certs certificate-key: %v", err)
	}
	certificateKey := strings.TrimSpace(string(key))
	// kubeadm takes the key from the configuration when there is one.
	labCfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	uploadCfg := filepath.Join(work, "upload-certs.yaml")
	withKey := strings.Replace(string(labCfg), "kind: InitConfiguration\n", "kind: InitConfiguration\ncertificateKey: "+certificateKey+"\n", 1)
	if err := os.WriteFile(uploadCfg, []byte(withKey), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(kubeadm, "init", "phase", "upload-certs", "--upload-certs", "--config", uploadCfg).CombinedOutput(); err != nil {
		t.Fatalf("kubeadm init phase upload-certs: %v\n%s", err, out)
	}
	pkiDir := filepath.Join(framework.KubernetesDir, "pki")
	manifest, err := pki.Export(pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	caManifest := filepath.Join(work, "kubelet-serving-ca.yaml")
	if err := os.WriteFile(caManifest, manifest, 0o600); err != nil {
		t.Fatal(err)
	}

	// The new host: stackward-node completes the template.
	outDir := filepath.Join(work, "stackward")
	run := exec.Command(bins["stackward-node"],
		"--search-order", "metadataService",
		"--metadata-url", strings.TrimSuffix(cloud.AuthURL, "/v3"),
		"--metadata-source-ip", hostIP,
		"--join-config", filepath.Join(framework.RepoRoot(), "bootstrap", "join-control-plane-configuration.yaml"),
		"--output-dir", outDir,
		"--timeout", "2s", "--attempts", "3")
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("stackward-node: %v\n%s", err, out)
	}
	joinPath := filepath.Join(outDir, "join-configuration.yaml")
	join := readYAML(t, joinPath)
	cpSection, _ := join["controlPlane"].(map[string]any)
	endpoint, _ := cpSection["localAPIEndpoint"].(map[string]any)
	if endpoint["advertiseAddress"] != hostIP {
		t.Fatalf("stackward-node set advertiseAddress %v, want the host's node IP %s", endpoint["advertiseAddress"], hostIP)
	}
	if out, err := exec.Command(kubeadm, "config", "validate", "--config", joinPath).CombinedOutput(); err != nil {
		t.Fatalf("the completed control-plane join configuration does not validate: %v\n%s", err, out)
	}
	// The operator's CHANGE values, for this lab.
	join["discovery"] = map[string]any{"bootstrapToken": map[string]any{
		"apiServerEndpoint": framework.ControlPlaneIP + ":6443",
		"token":             cp.BootstrapToken,
		"caCertHashes":      []any{caCertHash(t, cp.CACert)},
	}}
	// No container runtime in the lab; naming one skips detection (as
	// the lab's init configuration does).
	reg, _ := join["nodeRegistration"].(map[string]any)
	reg["criSocket"] = "unix:///run/containerd/containerd.sock"
	reg["name"] = "cp-2"
	cpSection["certificateKey"] = certificateKey
	writeYAML(t, joinPath, join)

	// The new host's own /etc/kubernetes: a mount namespace of its own.
	rendered := filepath.Join(work, "rendered")
	if err := os.MkdirAll(rendered, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `set -eu
mount -t tmpfs cp-2 /etc/kubernetes
"$STACKWARD" pki import --dir /etc/kubernetes/pki "$CA_MANIFEST"
"$KUBEADM" join phase control-plane-prepare all --config "$JOIN"
cp /etc/kubernetes/manifests/kube-apiserver.yaml /etc/kubernetes/manifests/kube-controller-manager.yaml /etc/kubernetes/pki/kubelet-serving-ca.* "$OUT"/
`
	host := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	host.Env = append(os.Environ(), "STACKWARD="+bins["stackward"], "CA_MANIFEST="+caManifest, "KUBEADM="+kubeadm, "JOIN="+joinPath, "OUT="+rendered)
	if out, err := host.CombinedOutput(); err != nil {
		t.Fatalf("the second host's join: %v\n%s", err, out)
	}

	t.Run("kubeadm's certificate upload does not carry the kubelet-serving CA", func(t *testing.T) {
		s, err := cp.Admin.CoreV1().Secrets("kube-system").Get(context.Background(), "kubeadm-certs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k := range s.Data {
			if strings.Contains(k, "kubelet-serving") {
				t.Errorf("kubeadm-certs has %s; bootstrap/README.md says it cannot", k)
			}
		}
	})
	t.Run("the second host holds the first host's kubelet-serving CA", func(t *testing.T) {
		for _, f := range []string{pki.CertFile, pki.KeyFile} {
			want, err := os.ReadFile(filepath.Join(pkiDir, f))
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(rendered, f))
			if err != nil || string(got) != string(want) {
				t.Errorf("%s on the second host differs from the first's (err %v)", f, err)
			}
		}
	})
	for _, tc := range []struct {
		name, manifest string
		want           []string
		absent         []string
	}{
		{
			name: "its apiserver advertises its own address and verifies kubelets with the serving CA", manifest: "kube-apiserver.yaml",
			want: []string{"--advertise-address=" + hostIP, "--kubelet-certificate-authority=/etc/kubernetes/pki/" + pki.CertFile},
		},
		{
			name: "its kube-controller-manager signs kubelet serving certificates with the serving CA only", manifest: "kube-controller-manager.yaml",
			want: []string{
				"--cluster-signing-kubelet-serving-cert-file=/etc/kubernetes/pki/" + pki.CertFile,
				"--cluster-signing-kubelet-serving-key-file=/etc/kubernetes/pki/" + pki.KeyFile,
				"--cluster-signing-kubelet-client-cert-file=/etc/kubernetes/pki/ca.crt",
				"--cloud-provider=external",
			},
			absent: []string{"--cluster-signing-cert-file=/", "--cluster-signing-key-file=/"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(rendered, tc.manifest))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(data), w) {
					t.Errorf("%s lacks %s:\n%s", tc.manifest, w, data)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(string(data), a) {
					t.Errorf("%s has %s", tc.manifest, a)
				}
			}
		})
	}
}

// caCertHash is kubeadm's discovery hash of a CA: sha256 of its public key.
func caCertHash(t *testing.T, caPEM []byte) string {
	t.Helper()
	block, _ := pem.Decode(caPEM)
	if block == nil {
		t.Fatal("no PEM in the cluster CA")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func writeYAML(t *testing.T, path string, m map[string]any) {
	t.Helper()
	data, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// buildBinaries builds the named commands of this module (the lab has no
// route out: the module cache only).
func buildBinaries(t *testing.T, names ...string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	bins := map[string]string{}
	for _, name := range names {
		bin := filepath.Join(dir, name)
		build := exec.Command("go", "build", "-o", bin, "./cmd/"+name)
		build.Dir = framework.RepoRoot()
		build.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
		bins[name] = bin
	}
	return bins
}
