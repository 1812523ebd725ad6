package framework

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/stackward/stackward/pkg/pki"
)

// HAHosts is how many control-plane hosts an HA lab has.
const HAHosts = 3

// ControlPlaneHost is one control-plane host of the lab: its etcd member,
// kube-apiserver and kube-controller-manager. All hosts share the lab's
// network namespace, each on its own address; the first host's
// /etc/kubernetes is the lab's, a joined host's is Root (kubeadm writes it
// in a mount namespace where Root is /etc/kubernetes).
type ControlPlaneHost struct {
	Name, IP string
	Root     string
	procs    []*Process
}

// HostName is the node name of the i-th control-plane host (from 0).
func HostName(i int) string {
	if i == 0 {
		return ControlPlaneNodeName
	}
	return fmt.Sprintf("%s-%d", ControlPlaneNodeName, i+1)
}

// HostIP is the address of the i-th control-plane host (from 0).
func HostIP(i int) string { return fmt.Sprintf("198.18.255.%d", i+1) }

// Hosts are the control plane's hosts (one unless HA).
func (cp *ControlPlane) Hosts() []*ControlPlaneHost { return cp.hosts }

// hostArgs adapts a static pod's command to a host sharing the network
// namespace: each process binds only its host's address (kubeadm's
// 127.0.0.1 listeners and the apiserver's wildcard would collide), and a
// joined host's files are under its Root.
func hostArgs(component string, args []string, h *ControlPlaneHost, dataDir string) []string {
	out := make([]string, 0, len(args)+1)
	for _, a := range args {
		if h.Root != "" {
			a = strings.ReplaceAll(a, KubernetesDir+"/", h.Root+"/")
		}
		name, _, _ := strings.Cut(a, "=")
		switch {
		case component == "etcd" && name == "--listen-client-urls":
			a = name + "=https://" + h.IP + ":2379"
		case component == "etcd" && name == "--listen-metrics-urls":
			a = name + "=http://" + h.IP + ":2381"
		case component == "etcd" && name == "--data-dir" && dataDir != "":
			a = name + "=" + dataDir
		case component == "kube-apiserver" && name == "--etcd-servers":
			a = name + "=https://" + h.IP + ":2379"
		case component == "kube-controller-manager" && name == "--bind-address":
			a = name + "=" + h.IP
		}
		out = append(out, a)
	}
	if component == "kube-apiserver" {
		out = append(out, "--bind-address="+h.IP)
	}
	return out
}

// startHostProcess starts a component of host h from its kubeadm manifest.
func (cp *ControlPlane) startHostProcess(h *ControlPlaneHost, component, dataDir string, ha bool) error {
	dir := KubernetesDir
	if h.Root != "" {
		dir = h.Root
	}
	command, err := manifestCommand(filepath.Join(dir, "manifests", component+".yaml"))
	if err != nil {
		return err
	}
	args := command[1:]
	if ha {
		args = hostArgs(component, args, h, dataDir)
	}
	name := component
	if h.Name != ControlPlaneNodeName {
		name += "-" + h.Name
	}
	p, err := StartProcess(cp.Dir, name, filepath.Join(cp.toolsDir, component), args...)
	if err != nil {
		return err
	}
	h.procs = append(h.procs, p)
	cp.procs = append(cp.procs, p)
	return nil
}

func manifestCommand(manifest string) ([]string, error) {
	data, err := os.ReadFile(manifest)
	if err != nil {
		return nil, err
	}
	var pod staticPod
	if err := yaml.Unmarshal(data, &pod); err != nil {
		return nil, fmt.Errorf("%s: %w", manifest, err)
	}
	if len(pod.Spec.Containers) == 0 || len(pod.Spec.Containers[0].Command) == 0 {
		return nil, fmt.Errorf("%s: no container command", manifest)
	}
	return pod.Spec.Containers[0].Command, nil
}

// joinHosts joins hosts 2..HAHosts as an operator does on each: kubeadm's
// shared certificates through --upload-certs and a certificate key, the
// kubelet-serving CA with stackward pki export/import (the library under
// the command), then kubeadm join's control-plane phases over
// bootstrap/join-control-plane-configuration.yaml. The lab plays the
// kubelet: it starts the static pods kubeadm wrote and mirrors each etcd
// pod into the API with kubeadm's endpoint annotation, which is how
// kubeadm finds the members to add the next one to.
func (cp *ControlPlane) joinHosts(ctx context.Context, cfgPath string) error {
	kubeadm := filepath.Join(cp.toolsDir, "kubeadm")
	if _, err := run(kubeadm, "init", "phase", "upload-config", "all", "--config", cfgPath); err != nil {
		return err
	}
	key, err := run(kubeadm, "certs", "certificate-key")
	if err != nil {
		return err
	}
	certificateKey := strings.TrimSpace(key)
	labCfg, err := os.ReadFile(cfgPath)
	if err != nil {
		return err
	}
	uploadCfg := filepath.Join(cp.Dir, "kubeadm-upload-certs.yaml")
	withKey := strings.Replace(string(labCfg), "kind: InitConfiguration\n", "kind: InitConfiguration\ncertificateKey: "+certificateKey+"\n", 1)
	if err := os.WriteFile(uploadCfg, []byte(withKey), 0o600); err != nil {
		return err
	}
	if _, err := run(kubeadm, "init", "phase", "upload-certs", "--upload-certs", "--config", uploadCfg); err != nil {
		return err
	}
	servingCA, err := pki.Export(filepath.Join(KubernetesDir, "pki"))
	if err != nil {
		return err
	}
	if err := cp.mirrorEtcdPod(ctx, cp.hosts[0]); err != nil {
		return err
	}
	for i := 1; i < HAHosts; i++ {
		h := &ControlPlaneHost{Name: HostName(i), IP: HostIP(i), Root: filepath.Join(cp.Dir, "hosts", HostName(i), "kubernetes")}
		if err := cp.joinHost(ctx, h, certificateKey, servingCA); err != nil {
			return fmt.Errorf("join control-plane host %s: %w", h.Name, err)
		}
		cp.hosts = append(cp.hosts, h)
		if err := cp.mirrorEtcdPod(ctx, h); err != nil {
			return err
		}
	}
	return nil
}

func (cp *ControlPlane) joinHost(ctx context.Context, h *ControlPlaneHost, certificateKey string, servingCA []byte) error {
	if err := os.MkdirAll(h.Root, 0o755); err != nil {
		return err
	}
	if err := AddAddress(h.IP); err != nil {
		return err
	}
	if _, err := pki.Import(filepath.Join(h.Root, "pki"), servingCA, "kubelet-serving-ca.yaml"); err != nil {
		return err
	}
	joinPath := filepath.Join(filepath.Dir(h.Root), "join-configuration.yaml")
	if err := cp.writeJoinConfig(joinPath, h, certificateKey); err != nil {
		return err
	}
	kubeadm := filepath.Join(cp.toolsDir, "kubeadm")
	onHost := func(args ...string) *exec.Cmd {
		script := `mount --bind "$ROOT" /etc/kubernetes && exec "$@"`
		cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "host", kubeadm}, args...)...)
		cmd.Env = append(os.Environ(), "ROOT="+h.Root)
		return cmd
	}
	if out, err := onHost("join", "phase", "control-plane-prepare", "all", "--config", joinPath).CombinedOutput(); err != nil {
		return fmt.Errorf("kubeadm join phase control-plane-prepare all: %w\n%s", err, out)
	}
	// kubeadm adds the member as a learner, writes etcd's manifest and
	// waits for the member to start and catch up: start it meanwhile.
	etcdJoin := onHost("join", "phase", "etcd-join", "--config", joinPath)
	logPath := filepath.Join(filepath.Dir(h.Root), "kubeadm-etcd-join.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	etcdJoin.Stdout, etcdJoin.Stderr = logFile, logFile
	if err := etcdJoin.Start(); err != nil {
		return err
	}
	joined := make(chan error, 1)
	go func() { joined <- etcdJoin.Wait() }()
	manifest := filepath.Join(h.Root, "manifests", "etcd.yaml")
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case err := <-joined:
			return false, fmt.Errorf("kubeadm join phase etcd-join ended before writing %s: %w", manifest, err)
		default:
		}
		_, err := os.Stat(manifest)
		return err == nil, nil
	})
	if err != nil {
		_ = etcdJoin.Process.Kill()
		return err
	}
	if err := cp.startHostProcess(h, "etcd", filepath.Join(filepath.Dir(h.Root), "etcd"), true); err != nil {
		return err
	}
	select {
	case err := <-joined:
		if err != nil {
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("kubeadm join phase etcd-join: %w\n%s", err, log)
		}
	case <-time.After(3 * time.Minute):
		_ = etcdJoin.Process.Kill()
		return fmt.Errorf("kubeadm join phase etcd-join did not finish in 3m (log %s)", logPath)
	}
	for _, component := range []string{"kube-apiserver", "kube-controller-manager"} {
		if err := cp.startHostProcess(h, component, "", true); err != nil {
			return err
		}
	}
	if err := cp.WaitHostReady(ctx, h); err != nil {
		return err
	}
	cp.vip.AddBackend(h.IP + ":6443")
	return nil
}

// writeJoinConfig completes bootstrap/join-control-plane-configuration.yaml
// for host h: the operator's CHANGE values and the advertise address
// stackward-node would fill in.
func (cp *ControlPlane) writeJoinConfig(path string, h *ControlPlaneHost, certificateKey string) error {
	src := filepath.Join(RepoRoot(), "bootstrap", "join-control-plane-configuration.yaml")
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var join map[string]any
	if err := yaml.Unmarshal(data, &join); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	hash, err := caCertHash(cp.CACert)
	if err != nil {
		return err
	}
	join["discovery"] = map[string]any{"bootstrapToken": map[string]any{
		"apiServerEndpoint": ControlPlaneVIP + ":6443",
		"token":             cp.BootstrapToken,
		"caCertHashes":      []any{hash},
	}}
	cpSection := mapAt(join, "controlPlane")
	cpSection["certificateKey"] = certificateKey
	mapAt(cpSection, "localAPIEndpoint")["advertiseAddress"] = h.IP
	reg := mapAt(join, "nodeRegistration")
	reg["name"] = h.Name
	// No container runtime in the lab; naming one skips detection.
	reg["criSocket"] = "unix:///run/containerd/containerd.sock"
	// The patches are stackward-node's kubelet patch; the lab runs the
	// kubelet itself and no kubelet phase.
	delete(join, "patches")
	out, err := yaml.Marshal(join)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}

// mirrorEtcdPod records host h's etcd as the kubelet's mirror pod would,
// with kubeadm's client-URL annotation and Ready.
func (cp *ControlPlane) mirrorEtcdPod(ctx context.Context, h *ControlPlaneHost) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "etcd-" + h.Name, Namespace: "kube-system",
			Labels:      map[string]string{"component": "etcd", "tier": "control-plane"},
			Annotations: map[string]string{"kubeadm.kubernetes.io/etcd.advertise-client-urls": "https://" + h.IP + ":2379"},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}},
	}
	if err := cp.WaitDefaultServiceAccount(ctx, "kube-system"); err != nil {
		return fmt.Errorf("mirror pod of %s's etcd: %w", h.Name, err)
	}
	created, err := cp.Admin.CoreV1().Pods("kube-system").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("mirror pod of %s's etcd: %w", h.Name, err)
	}
	created.Status.Phase = corev1.PodRunning
	created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if _, err := cp.Admin.CoreV1().Pods("kube-system").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("mirror pod of %s's etcd: %w", h.Name, err)
	}
	return nil
}

// WaitHostReady waits until the host's own apiserver answers /readyz.
func (cp *ControlPlane) WaitHostReady(ctx context.Context, h *ControlPlaneHost) error {
	client, err := cp.HostAdmin(h)
	if err != nil {
		return err
	}
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, p := range h.procs {
			if done, perr := p.Exited(); done {
				return false, fmt.Errorf("%s exited: %w\n%s", p.Name, perr, p.Tail(4000))
			}
		}
		_, lastErr = client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return lastErr == nil, nil
	})
	if err != nil {
		return fmt.Errorf("apiserver of %s: %w (last: %w)", h.Name, err, lastErr)
	}
	return nil
}

// HostAdmin is a cluster-admin client of host h's own apiserver (not the
// VIP).
func (cp *ControlPlane) HostAdmin(h *ControlPlaneHost) (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(cp.AdminConfig)
	cfg.Host = "https://" + h.IP + ":6443"
	return kubernetes.NewForConfig(cfg)
}

// StopHost powers control-plane host name off: its etcd member,
// apiserver and controller manager end at once (its kubelet is the
// test's to stop).
func (cp *ControlPlane) StopHost(name string) error {
	for _, h := range cp.hosts {
		if h.Name == name {
			for _, p := range h.procs {
				p.Kill()
			}
			return nil
		}
	}
	return fmt.Errorf("no control-plane host %s", name)
}

// EtcdMember is a member as etcd lists it.
type EtcdMember struct {
	Name      string `json:"name"`
	IsLearner bool   `json:"isLearner"`
}

// EtcdMembers asks the etcd member on host h for the cluster's members
// (etcd's JSON gateway, with kubeadm's healthcheck client certificate).
func (cp *ControlPlane) EtcdMembers(ctx context.Context, h *ControlPlaneHost) ([]EtcdMember, error) {
	dir := filepath.Join(KubernetesDir, "pki", "etcd")
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "healthcheck-client.crt"), filepath.Join(dir, "healthcheck-client.key"))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12,
	}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+h.IP+":2379/v3/cluster/member/list", strings.NewReader("{}"))
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("etcd member list on %s: %w", h.Name, err)
	}
	defer resp.Body.Close()
	var body struct {
		Members []EtcdMember `json:"members"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("etcd member list on %s: %s", h.Name, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("etcd member list on %s: %w", h.Name, err)
	}
	return body.Members, nil
}

// RSS is the resident memory of the control plane's running processes,
// in bytes (VmRSS from /proc).
func (cp *ControlPlane) RSS() int64 {
	var sum int64
	for _, p := range cp.procs {
		if done, _ := p.Exited(); !done {
			sum += ProcessRSS(p.PID())
		}
	}
	return sum
}

// ProcessRSS is a process's resident memory in bytes (0 if unknown).
func ProcessRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// caCertHash is kubeadm's discovery hash of a CA: sha256 of its public key.
func caCertHash(caPEM []byte) (string, error) {
	block, _ := pem.Decode(caPEM)
	if block == nil {
		return "", fmt.Errorf("no PEM in the cluster CA")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("the cluster CA: %w", err)
	}
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// clearDir removes everything inside dir, keeping dir (a mount point).
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// Acquired reports whether host h's kube-controller-manager has taken the
// kube-system Lease named lease (its log says so when it does).
func (h *ControlPlaneHost) Acquired(lease string) bool {
	for _, p := range h.procs {
		if !strings.HasPrefix(p.Name, "kube-controller-manager") {
			continue
		}
		data, err := os.ReadFile(p.LogPath)
		if err == nil && strings.Contains(string(data), `"Successfully acquired lease" lock="kube-system/`+lease+`"`) {
			return true
		}
	}
	return false
}

// WaitDefaultServiceAccount waits until namespace ns has its "default"
// service account. A pod created without one fails ServiceAccount
// admission, and the controller manager's service account controller makes
// it only moments after it starts (or after the namespace is created).
func (cp *ControlPlane) WaitDefaultServiceAccount(ctx context.Context, ns string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Admin.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("no service account %s/default after a minute: %w", ns, err)
	}
	return nil
}
