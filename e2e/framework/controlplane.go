package framework

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/stackward/stackward/pkg/pki"
)

// ControlPlane is a running etcd + kube-apiserver + kube-controller-manager
// whose PKI, kubeconfigs and flags kubeadm generated from bootstrap/.
type ControlPlane struct {
	// Dir holds the lab's data and process logs.
	Dir string
	// Server is the apiserver URL.
	Server string
	// CACert is the cluster CA (PEM): what pods and kubelets trust for the
	// apiserver, and the signer of kubelet client certificates.
	CACert []byte
	// ServingCACert is the kubelet-serving CA (PEM, `stackward pki init`)
	// that signs kubelet serving certificates; only the apiserver trusts it.
	ServingCACert []byte
	// BootstrapToken is a kubeadm bootstrap token (id.secret) for joining nodes.
	BootstrapToken string
	// AdminConfig is cluster-admin (kubeadm's super-admin.conf).
	AdminConfig *rest.Config
	Admin       kubernetes.Interface
	// StartupTime is how long the control plane took to become ready.
	StartupTime time.Duration

	toolsDir string
	procs    []*Process
	hosts    []*ControlPlaneHost
	vip      *VIP // HA only
}

var (
	sharedOnce sync.Once
	shared     *ControlPlane
	sharedErr  error
)

// SharedControlPlane starts the package's control plane on first use and
// returns it; it is torn down when the test binary exits (see Main).
func SharedControlPlane(t testing.TB) *ControlPlane {
	t.Helper()
	ToolsDir(t)
	sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared, sharedErr = StartControlPlane(ctx, os.Getenv("STACKWARD_TOOLS_DIR"))
	})
	if sharedErr != nil {
		t.Fatalf("control plane: %v", sharedErr)
	}
	return shared
}

// ReplaceSharedControlPlane stops the shared control plane, if one was
// started, and starts one with opts in its place: later SharedControlPlane
// calls return it. The lab's addresses fit one control plane at a time, so
// a test that needs another configuration (the approver as signer) and
// the package's other tests take turns.
func ReplaceSharedControlPlane(t testing.TB, opts ControlPlaneOptions) *ControlPlane {
	t.Helper()
	ToolsDir(t)
	sharedOnce.Do(func() {}) // from now on only this function starts one
	if shared != nil {
		shared.Stop()
		shared = nil
	}
	timeout := 2 * time.Minute
	if opts.HA {
		timeout = 6 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	shared, sharedErr = StartControlPlaneWith(ctx, os.Getenv("STACKWARD_TOOLS_DIR"), opts)
	if sharedErr != nil {
		t.Fatalf("control plane: %v", sharedErr)
	}
	return shared
}

// StartControlPlane runs kubeadm's certs, kubeconfig, etcd and control-plane
// phases over bootstrap/init-configuration.yaml (lab addresses substituted),
// then starts the static pods' commands as processes and waits until ready.
func StartControlPlane(ctx context.Context, toolsDir string) (*ControlPlane, error) {
	return StartControlPlaneWith(ctx, toolsDir, ControlPlaneOptions{})
}

// ControlPlaneOptions vary the lab's control plane from bootstrap/.
type ControlPlaneOptions struct {
	// ApproverSigns gives kube-controller-manager no kubelet-serving signer
	// files, so it skips that signer: stackward-approver --sign-with-ca-dir
	// issues the certificates.
	ApproverSigns bool
	// DualStack gives the cluster IPv4 and IPv6 Service and Pod ranges
	// (kube-apiserver and kube-controller-manager through kubeadm's
	// networking), so Services may be PreferDualStack or RequireDualStack.
	DualStack bool
	// HA runs HAHosts control-plane hosts behind ControlPlaneVIP (the
	// controlPlaneEndpoint): the first from bootstrap/init-configuration.yaml,
	// the others joined with bootstrap/join-control-plane-configuration.yaml,
	// each with an etcd member, an apiserver and a controller manager.
	// Server is the VIP.
	HA bool
}

// StartControlPlaneWith is StartControlPlane with options.
func StartControlPlaneWith(ctx context.Context, toolsDir string, opts ControlPlaneOptions) (*ControlPlane, error) {
	start := time.Now()
	dir, err := os.MkdirTemp("", "stackward-lab-")
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Dir: dir, Server: "https://" + ControlPlaneIP + ":6443", toolsDir: toolsDir}
	cp.hosts = []*ControlPlaneHost{{Name: ControlPlaneNodeName, IP: ControlPlaneIP}}
	if opts.HA {
		// A previous control plane's files would be reused by kubeadm,
		// and its apiserver certificate lacks the VIP.
		if err := clearDir(KubernetesDir); err != nil {
			return nil, err
		}
		cp.Server = "https://" + ControlPlaneVIP + ":6443"
		if cp.vip, err = StartVIP(ControlPlaneVIP + ":6443"); err != nil {
			return nil, err
		}
		cp.vip.AddBackend(ControlPlaneIP + ":6443")
	}
	cp.BootstrapToken, err = newBootstrapToken()
	if err != nil {
		return nil, err
	}
	kubeadm := filepath.Join(toolsDir, "kubeadm")
	cfgPath := filepath.Join(dir, "kubeadm.yaml")
	if err := writeLabKubeadmConfig(cfgPath, dir, cp.BootstrapToken, opts); err != nil {
		return nil, err
	}
	// What an operator runs before kubeadm init (bootstrap/README.md).
	if _, err := pki.Init(pki.InitOptions{Dir: filepath.Join(KubernetesDir, "pki")}); err != nil {
		return nil, err
	}
	for _, phase := range [][]string{{"certs", "all"}, {"kubeconfig", "all"}, {"etcd", "local"}, {"control-plane", "all"}} {
		args := append([]string{"init", "phase"}, phase...)
		if _, err := run(kubeadm, append(args, "--config", cfgPath)...); err != nil {
			return nil, err
		}
	}
	for _, component := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if err := cp.startHostProcess(cp.hosts[0], component, "", opts.HA); err != nil {
			cp.Stop()
			return nil, err
		}
	}
	if err := cp.waitReady(ctx); err != nil {
		cp.Stop()
		return nil, err
	}
	superAdmin := filepath.Join(KubernetesDir, "super-admin.conf")
	// RBAC and the token for TLS bootstrapping: what `kubeadm init` does.
	if _, err := run(kubeadm, "init", "phase", "bootstrap-token", "--config", cfgPath, "--kubeconfig", superAdmin); err != nil {
		cp.Stop()
		return nil, err
	}
	if opts.HA {
		if err := cp.joinHosts(ctx, cfgPath); err != nil {
			cp.Stop()
			return nil, err
		}
	}
	cp.StartupTime = time.Since(start)
	return cp, nil
}

// writeLabKubeadmConfig loads bootstrap/init-configuration.yaml, the file
// operators use, and replaces only what the lab must: addresses, subnets
// inside 198.18.0.0/15, the etcd data dir, the join token and a short
// node-monitor grace period so lifecycle tests are quick.
func writeLabKubeadmConfig(path, dir, token string, opts ControlPlaneOptions) error {
	src := filepath.Join(RepoRoot(), "bootstrap", "init-configuration.yaml")
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var out []string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		switch obj["kind"] {
		case "InitConfiguration":
			obj["localAPIEndpoint"] = map[string]any{"advertiseAddress": ControlPlaneIP, "bindPort": 6443}
			reg := mapAt(obj, "nodeRegistration")
			reg["name"] = ControlPlaneNodeName
			// No container runtime in the lab; naming one skips detection.
			reg["criSocket"] = "unix:///run/containerd/containerd.sock"
			obj["bootstrapTokens"] = []any{map[string]any{
				"token": token, "ttl": "2h",
				"groups": []any{"system:bootstrappers:kubeadm:default-node-token"},
				"usages": []any{"signing", "authentication"},
			}}
		case "ClusterConfiguration":
			// One apiserver: the endpoint is its address; an HA lab's is the
			// VIP in front of its apiservers.
			obj["controlPlaneEndpoint"] = ControlPlaneIP + ":6443"
			sans := []any{"127.0.0.1", "localhost"}
			if opts.HA {
				obj["controlPlaneEndpoint"] = ControlPlaneVIP + ":6443"
				sans = append(sans, ControlPlaneVIP)
			}
			net := mapAt(obj, "networking")
			net["serviceSubnet"] = LabServiceCIDR
			net["podSubnet"] = "198.19.128.0/17"
			if opts.DualStack {
				net["serviceSubnet"] = LabServiceCIDR + "," + LabServiceCIDRv6
				net["podSubnet"] = "198.19.128.0/17,fd00:198:20::/56"
			}
			local := map[string]any{"dataDir": filepath.Join(dir, "etcd")}
			if opts.HA {
				// The hosts share the lab's network namespace, so a member
				// reaches a peer from the peer's own address (the kernel's
				// choice on lo), never from the address in its certificate.
				local["extraArgs"] = []any{map[string]any{"name": "peer-skip-client-san-verification", "value": "true"}}
			}
			mapAt(obj, "etcd")["local"] = local
			// So the apiserver can be forwarded to the host's loopback.
			mapAt(obj, "apiServer")["certSANs"] = sans
			cm := mapAt(obj, "controllerManager")
			args, _ := cm["extraArgs"].([]any)
			if opts.ApproverSigns {
				args = slices.DeleteFunc(args, func(a any) bool {
					m, _ := a.(map[string]any)
					name, _ := m["name"].(string)
					return strings.HasPrefix(name, "cluster-signing-kubelet-serving-")
				})
			}
			cm["extraArgs"] = append(args,
				map[string]any{"name": "node-monitor-grace-period", "value": "8s"},
				map[string]any{"name": "node-monitor-period", "value": "2s"},
			)
		}
		b, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		out = append(out, string(b))
	}
	return os.WriteFile(path, []byte(strings.Join(out, "---\n")), 0o600)
}

// LabServiceCIDR is the lab cluster's Service CIDR; its first address is
// the kubernetes Service's ClusterIP.
const LabServiceCIDR = "198.19.0.0/17"

// LabServiceCIDRv6 is the IPv6 Service CIDR of a dual-stack lab
// (ControlPlaneOptions.DualStack).
const LabServiceCIDRv6 = "fd00:198:19::/112"

func mapAt(obj map[string]any, key string) map[string]any {
	m, ok := obj[key].(map[string]any)
	if !ok {
		m = map[string]any{}
		obj[key] = m
	}
	return m
}

// staticPod is the part of a kubeadm static pod manifest we execute.
type staticPod struct {
	Spec struct {
		Containers []struct {
			Command []string `json:"command"`
		} `json:"containers"`
	} `json:"spec"`
}

func (cp *ControlPlane) waitReady(ctx context.Context) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(KubernetesDir, "super-admin.conf"))
	if err != nil {
		return err
	}
	// Tests poll and list a lot; client-go's default 5 QPS would throttle them.
	cfg.QPS, cfg.Burst = 100, 200
	cp.AdminConfig = cfg
	if cp.Admin, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if cp.CACert, err = os.ReadFile(filepath.Join(KubernetesDir, "pki", "ca.crt")); err != nil {
		return err
	}
	if cp.ServingCACert, err = os.ReadFile(filepath.Join(KubernetesDir, "pki", pki.CertFile)); err != nil {
		return err
	}
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, p := range cp.procs {
			if done, perr := p.Exited(); done {
				return false, fmt.Errorf("%s exited: %w\n%s", p.Name, perr, p.Tail(4000))
			}
		}
		body, err := cp.Admin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			lastErr = fmt.Errorf("apiserver /readyz: %w: %s", err, body)
			return false, nil
		}
		// The controller manager is ready once it holds its lease.
		_, err = cp.Admin.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1GetOptions)
		if err != nil {
			lastErr = fmt.Errorf("kube-controller-manager lease: %w", err)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return errors.Join(err, lastErr)
	}
	return nil
}

// Stop ends every control-plane process and removes the lab's data.
func (cp *ControlPlane) Stop() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		cp.procs[i].Stop()
	}
	cp.procs = nil
	if cp.vip != nil {
		cp.vip.Stop()
		cp.vip = nil
	}
	if os.Getenv("STACKWARD_E2E_KEEP") == "" {
		_ = os.RemoveAll(cp.Dir)
	}
}

// Logs returns the tails of the control plane's logs, for failure output.
func (cp *ControlPlane) Logs() string {
	var b strings.Builder
	for _, p := range cp.procs {
		b.WriteString(p.Tail(3000))
		b.WriteString("\n")
	}
	return b.String()
}

// BootstrapKubeconfig writes a kubeconfig that authenticates with the
// bootstrap token, as `kubeadm join` gives a kubelet.
func (cp *ControlPlane) BootstrapKubeconfig(path string) error {
	return cp.writeTokenKubeconfig(path, "tls-bootstrap-token-user", cp.BootstrapToken)
}

// WriteKubeconfig writes a kubeconfig for a bearer-token identity.
func (cp *ControlPlane) WriteKubeconfig(path string, cfg *rest.Config) error {
	return cp.writeTokenKubeconfig(path, "identity", cfg.BearerToken)
}

func (cp *ControlPlane) writeTokenKubeconfig(path, user, token string) error {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: lab
  context: {cluster: lab, user: %s}
current-context: lab
`, cp.Server, b64(cp.CACert), user, token, user)
	return os.WriteFile(path, []byte(cfg), 0o600)
}

// RESTConfigForToken is a client identity for a bearer token (e.g. a
// ServiceAccount token from TokenRequest), trusting the cluster CA.
func (cp *ControlPlane) RESTConfigForToken(token string) *rest.Config {
	return &rest.Config{
		Host:            cp.Server,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.CACert},
	}
}

// WaitForNode waits until the named Node satisfies cond.
func (cp *ControlPlane) WaitForNode(ctx context.Context, name string, timeout time.Duration, cond func(*corev1.Node) bool) (*corev1.Node, error) {
	var node *corev1.Node
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n, err := cp.Admin.CoreV1().Nodes().Get(ctx, name, metav1GetOptions)
		if err != nil {
			return false, nil
		}
		node = n
		return cond(n), nil
	})
	if err != nil {
		return node, fmt.Errorf("node %s: %w", name, err)
	}
	return node, nil
}

func newBootstrapToken() (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	buf := make([]byte, 22)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	for i := range buf {
		buf[i] = alphabet[int(buf[i])%len(alphabet)]
	}
	return string(buf[:6]) + "." + string(buf[6:]), nil
}
