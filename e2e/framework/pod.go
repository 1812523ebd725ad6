package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Pod is a pod of the chart run out of cluster as a kubelet would run it:
// each container's binary with exactly its args, the pod's Secret volumes
// as directories, and a TokenRequest token of its ServiceAccount.
type Pod struct {
	Spec  corev1.PodSpec
	Procs []*Process
	// Volumes are the directories of the pod's volumes, by volume name.
	Volumes map[string]string
	ns      string
}

// StartPod starts every container of spec (a pod of namespace ns) from
// bins, a binary per container name. Callers pick where the binaries come
// from: `go build`, or a release's image.
func (cp *ControlPlane) StartPod(ctx context.Context, t *testing.T, ns string, spec corev1.PodSpec, bins map[string]string) *Pod {
	t.Helper()
	dirs, mounts := podVolumes(ctx, t, cp, ns, spec)
	logDir := t.TempDir()
	p := &Pod{Spec: spec, Volumes: dirs, ns: ns}
	for _, c := range spec.Containers {
		bin, ok := bins[c.Name]
		if !ok {
			t.Fatalf("no binary for container %s", c.Name)
		}
		kubeconfig := cp.containerKubeconfig(ctx, t, ns, spec, c)
		args := containerArgs(c, mounts)
		// What a pod gets from its ServiceAccount in cluster: the API
		// client identity and, for the servers that delegate
		// authentication and authorization to the apiserver (the CCM,
		// metrics-server), the in-cluster config they would find for it.
		args = append(args, "--kubeconfig="+kubeconfig)
		if c.Name == "ccm" || c.Name == "metrics-server" {
			args = append(args, "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig)
		}
		t.Logf("%s %s %s", c.Name, bin, strings.Join(args, " "))
		p.Procs = append(p.Procs, StartProcessForTest(t, logDir, c.Name, bin, args...))
	}
	return p
}

// Stop ends every container, as deleting the pod does.
func (p *Pod) Stop() {
	for _, proc := range p.Procs {
		proc.Stop()
	}
}

// SyncVolumes rewrites the pod's volumes from the objects they come from,
// in place, as the kubelet's periodic sync updates ConfigMap, Secret and
// projected volumes of a running pod.
func (p *Pod) SyncVolumes(ctx context.Context, cp *ControlPlane) error {
	for _, v := range p.Spec.Volumes {
		files, err := cp.volumeFiles(ctx, p.ns, v)
		if err != nil {
			return err
		}
		if err := writeVolume(p.Volumes[v.Name], files); err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
	}
	return nil
}

// Running fails as soon as a container has exited.
func (p *Pod) Running() error {
	for _, proc := range p.Procs {
		if done, err := proc.Exited(); done {
			return fmt.Errorf("%s exited: %w", proc.Name, err)
		}
	}
	return nil
}

// WaitReady waits until each Lease in ns has a holder and every container's
// liveness and readiness probes answer.
func (p *Pod) WaitReady(ctx context.Context, t *testing.T, cp *ControlPlane, ns string, leases ...string) {
	t.Helper()
	for _, lease := range leases {
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			if err := p.Running(); err != nil {
				return false, err
			}
			l, err := cp.Admin.CoordinationV1().Leases(ns).Get(ctx, lease, metav1.GetOptions{})
			return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", nil
		})
		if err != nil {
			t.Errorf("Lease %s/%s has no holder: %v", ns, lease, err)
		}
	}
	for _, c := range p.Spec.Containers {
		for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
			if err := waitProbe(ctx, c, probe, p.Running); err != nil {
				t.Errorf("container %s: %v", c.Name, err)
			}
		}
	}
}

// CheckNodeJoins creates server name (the i-th node) in the cloud, starts
// its hollow kubelet and checks what a running CCM and approver must do: the
// Node is initialized with the server's providerID and the kubelet gets an
// approved serving certificate.
func (cp *ControlPlane) CheckNodeJoins(ctx context.Context, t *testing.T, cloud *SimCloud, name string, i int) {
	t.Helper()
	srv := cloud.CreateServer(t, name, i, "m1.small", "az-1")
	node := cp.StartNode(t, NodeOptions{Name: name, IP: NodeIP(i)})
	n, err := cp.WaitForNode(ctx, name, 90*time.Second, func(n *corev1.Node) bool {
		return n.Spec.ProviderID != "" && !HasTaint(n, "node.cloudprovider.kubernetes.io/uninitialized")
	})
	if err != nil {
		t.Fatalf("the CCM did not initialize the node: %v", err)
	}
	if want := "openstack:///" + srv.ID; n.Spec.ProviderID != want {
		t.Errorf("providerID %q, want %q", n.Spec.ProviderID, want)
	}
	csr, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, name, 90*time.Second, func(c *certificatesv1.CertificateSigningRequest) bool {
		return Condition(c, certificatesv1.CertificateApproved) != nil
	})
	if err != nil {
		t.Fatalf("the approver did not approve the serving CSR: %v", err)
	}
	t.Logf("approved: %s", DescribeCSR(csr))
	if _, err := node.WaitForServingCertificate(ctx, cp.ServingCACert, 60*time.Second); err != nil {
		t.Errorf("kubelet serving certificate: %v", err)
	}
}

// podVolumes materializes the pod's volumes as directories, as the kubelet
// would (see volumeFiles), and returns volume name → directory and
// mountPath → directory.
func podVolumes(ctx context.Context, t *testing.T, cp *ControlPlane, ns string, pod corev1.PodSpec) (dirs, paths map[string]string) {
	t.Helper()
	dirs = map[string]string{}
	for _, v := range pod.Volumes {
		dir := t.TempDir()
		files, err := cp.volumeFiles(ctx, ns, v)
		if err != nil {
			t.Fatal(err)
		}
		if err := writeVolume(dir, files); err != nil {
			t.Fatalf("volume %s: %v", v.Name, err)
		}
		dirs[v.Name] = dir
	}
	paths = map[string]string{}
	for _, c := range pod.Containers {
		for _, m := range c.VolumeMounts {
			paths[m.MountPath] = dirs[m.Name]
		}
	}
	return dirs, paths
}

// containerArgs are the container's args with paths under its mounts
// pointing at the materialized volumes, and $(VAR) references to its
// environment expanded as the kubelet does: the downward API's pod IP is
// 127.0.0.1, where the lab's pod (hostNetwork) serves and is probed.
func containerArgs(c corev1.Container, mounts map[string]string) []string {
	var env []string
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
			env = append(env, "$("+e.Name+")", "127.0.0.1")
		case e.ValueFrom == nil:
			env = append(env, "$("+e.Name+")", e.Value)
		}
	}
	expand := strings.NewReplacer(env...)
	args := make([]string, 0, len(c.Args))
	for _, a := range c.Args {
		a = expand.Replace(a)
		// The longest mount that holds the path wins; replaced once (the
		// directories themselves live under /tmp, a mount too).
		// A flag naming the mount point itself (--cert-dir=/tmp) points
		// at the volume too.
		best := ""
		for mountPath := range mounts {
			if (strings.Contains(a, "="+mountPath+"/") || strings.HasSuffix(a, "="+mountPath)) && len(mountPath) > len(best) {
				best = mountPath
			}
		}
		switch {
		case best != "" && strings.HasSuffix(a, "="+best):
			a = strings.TrimSuffix(a, best) + mounts[best]
		case best != "":
			a = strings.Replace(a, "="+best+"/", "="+mounts[best]+"/", 1)
		}
		args = append(args, a)
	}
	return args
}

// waitProbe polls an HTTP probe of a container on localhost (the pod has
// hostNetwork) until it answers 2xx.
func waitProbe(ctx context.Context, c corev1.Container, p *corev1.Probe, running func() error) error {
	if p == nil || p.HTTPGet == nil {
		return fmt.Errorf("no HTTP probe")
	}
	port := p.HTTPGet.Port.IntValue()
	for _, cp := range c.Ports {
		if cp.Name == p.HTTPGet.Port.String() {
			port = int(cp.ContainerPort)
		}
	}
	scheme := strings.ToLower(string(p.HTTPGet.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	url := fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, port, p.HTTPGet.Path)
	// The kubelet does not verify a probe's certificate either.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := running(); err != nil {
			return false, err
		}
		resp, err := client.Get(url)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		resp.Body.Close()
		last = resp.Status
		return resp.StatusCode >= 200 && resp.StatusCode < 300, nil
	})
	if err != nil {
		return fmt.Errorf("probe %s: %s: %w", url, last, err)
	}
	return nil
}
