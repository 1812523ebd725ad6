//go:build e2e

package chart

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/stackward/stackward/e2e/framework"
)

// runRelease is the release whose pod this test runs; apart from
// sdkRelease so the two tests can share the control plane.
const runRelease = "stackward-run"

// TestChartPodRunsAsInstalled runs the pod that `helm install` created as a
// kubelet would, but out of cluster: the real stackward-ccm and
// stackward-approver binaries with exactly the Deployment's container args,
// the chart's Secret as the files of its volume, and a TokenRequest token of
// the chart's ServiceAccount. A hollow kubelet joins: the CCM must
// initialize its Node and the approver must approve its serving
// certificate, both under the chart's RBAC and leader election.
func TestChartPodRunsAsInstalled(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	cloud := framework.StartCloud(t, framework.CloudOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bins := buildBinaries(t)
	start := time.Now()

	// The operator's cloud.conf, given to the chart as text.
	conf, err := os.ReadFile(cloud.CloudConf(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	cfg := helmConfig(t, cp)
	chrt, err := loader.Load(chartDir())
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.Timeout = runRelease, ns, 2*time.Minute
	if _, err := install.RunWithContext(ctx, chrt, map[string]any{
		"cloudConfig": map[string]any{"contents": string(conf)},
		"clusterName": "lab",
		"ccm":         map[string]any{"extraArgs": map[string]any{"node-monitor-period": "2s", "v": 2}},
	}); err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Cleanup(func() {
		if _, err := action.NewUninstall(cfg).Run(runRelease); err != nil {
			t.Errorf("helm uninstall: %v", err)
		}
	})

	d, err := cp.Admin.AppsV1().Deployments(ns).Get(ctx, runRelease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template.Spec
	mounts := podVolumes(ctx, t, cp, pod)
	logDir := t.TempDir()
	var procs []*framework.Process
	for _, c := range pod.Containers {
		bin, ok := bins[c.Name]
		if !ok {
			t.Fatalf("no binary for container %s", c.Name)
		}
		kubeconfig := containerKubeconfig(ctx, t, cp, pod, c)
		args := containerArgs(c, mounts)
		// What a pod gets from its ServiceAccount in cluster: the API
		// client identity and, for the CCM, delegated authentication.
		args = append(args, "--kubeconfig="+kubeconfig)
		if c.Name == "ccm" {
			args = append(args, "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig)
		}
		t.Logf("%s %s", c.Name, strings.Join(args, " "))
		procs = append(procs, framework.StartProcessForTest(t, logDir, c.Name, bin, args...))
	}
	// running fails a poll at once when a container has exited.
	running := func() error {
		for _, p := range procs {
			if done, err := p.Exited(); done {
				return fmt.Errorf("%s exited: %v", p.Name, err)
			}
		}
		return nil
	}

	t.Run("both containers lead their Lease and answer their probes", func(t *testing.T) {
		for _, lease := range []string{"cloud-controller-manager", "stackward-approver"} {
			err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				if err := running(); err != nil {
					return false, err
				}
				l, err := cp.Admin.CoordinationV1().Leases(ns).Get(ctx, lease, metav1.GetOptions{})
				return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", nil
			})
			if err != nil {
				t.Errorf("Lease %s/%s has no holder: %v", ns, lease, err)
			}
		}
		for _, c := range pod.Containers {
			for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
				if err := waitProbe(ctx, c, p, running); err != nil {
					t.Errorf("container %s: %v", c.Name, err)
				}
			}
		}
	})

	if t.Failed() {
		return
	}
	t.Run("a joining node is initialized and gets its serving certificate", func(t *testing.T) {
		const name = "chart-node-1"
		srv := cloud.CreateServer(t, name, 1, "m1.small", "az-1")
		node := cp.StartNode(t, framework.NodeOptions{Name: name, IP: framework.NodeIP(1)})
		n, err := cp.WaitForNode(ctx, name, 90*time.Second, func(n *corev1.Node) bool {
			return n.Spec.ProviderID != "" && !framework.HasTaint(n, "node.cloudprovider.kubernetes.io/uninitialized")
		})
		if err != nil {
			t.Fatalf("the CCM did not initialize the node: %v", err)
		}
		if want := "openstack:///" + srv.ID; n.Spec.ProviderID != want {
			t.Errorf("providerID %q, want %q", n.Spec.ProviderID, want)
		}
		csr, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, name, 90*time.Second, func(c *certificatesv1.CertificateSigningRequest) bool {
			return framework.Condition(c, certificatesv1.CertificateApproved) != nil
		})
		if err != nil {
			t.Fatalf("the approver did not approve the serving CSR: %v", err)
		}
		t.Logf("approved: %s", framework.DescribeCSR(csr))
		if _, err := node.WaitForServingCertificate(ctx, cp.ServingCACert, 60*time.Second); err != nil {
			t.Errorf("kubelet serving certificate: %v", err)
		}
	})
	t.Logf("install to approved serving certificate: %v", time.Since(start).Round(time.Millisecond))
}

// buildBinaries builds stackward-ccm and stackward-approver, by container
// name. The Go build cache makes this quick after the first time.
func buildBinaries(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/stackward-ccm", "./cmd/stackward-approver")
	cmd.Dir = framework.RepoRoot()
	// The lab's network namespace has no route out: build from the
	// module cache only.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return map[string]string{
		"ccm":      filepath.Join(dir, "stackward-ccm"),
		"approver": filepath.Join(dir, "stackward-approver"),
	}
}

// podVolumes materializes the pod's Secret volumes as directories, as the
// kubelet would, and returns mountPath → directory.
func podVolumes(ctx context.Context, t *testing.T, cp *framework.ControlPlane, pod corev1.PodSpec) map[string]string {
	t.Helper()
	dirs := map[string]string{}
	for _, v := range pod.Volumes {
		dir := t.TempDir()
		if v.Secret != nil {
			s, err := cp.Admin.CoreV1().Secrets(ns).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("volume %s: %v", v.Name, err)
			}
			for k, data := range s.Data {
				if err := os.WriteFile(filepath.Join(dir, k), data, 0o440); err != nil {
					t.Fatal(err)
				}
			}
		}
		dirs[v.Name] = dir
	}
	paths := map[string]string{}
	for _, c := range pod.Containers {
		for _, m := range c.VolumeMounts {
			paths[m.MountPath] = dirs[m.Name]
		}
	}
	return paths
}

// containerArgs are the container's args with paths under its mounts
// pointing at the materialized volumes.
func containerArgs(c corev1.Container, mounts map[string]string) []string {
	args := make([]string, 0, len(c.Args))
	for _, a := range c.Args {
		// The longest mount that holds the path wins; replaced once (the
		// directories themselves live under /tmp, a mount too).
		best := ""
		for mountPath := range mounts {
			if strings.Contains(a, "="+mountPath+"/") && len(mountPath) > len(best) {
				best = mountPath
			}
		}
		if best != "" {
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

// serviceAccountDir is where a container finds its API credentials.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// containerKubeconfig writes a kubeconfig with the identity the container
// gets in the pod: the pod's ServiceAccount for a projected token, or, for
// a ServiceAccount token Secret mounted there, the token the token
// controller put in it (whose ServiceAccount must be the one it names).
func containerKubeconfig(ctx context.Context, t *testing.T, cp *framework.ControlPlane, pod corev1.PodSpec, c corev1.Container) string {
	t.Helper()
	var volume string
	for _, m := range c.VolumeMounts {
		if m.MountPath == serviceAccountDir {
			volume = m.Name
		}
	}
	var saConfig *rest.Config
	for _, v := range pod.Volumes {
		if v.Name != volume {
			continue
		}
		switch {
		case v.Projected != nil:
			cfg, err := cp.ServiceAccountConfig(ctx, ns, pod.ServiceAccountName)
			if err != nil {
				t.Fatal(err)
			}
			saConfig = cfg
		case v.Secret != nil:
			var token []byte
			var owner string
			err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				s, err := cp.Admin.CoreV1().Secrets(ns).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				token, owner = s.Data["token"], s.Annotations["kubernetes.io/service-account.name"]
				return len(token) > 0, nil
			})
			if err != nil {
				t.Fatalf("container %s: the token controller filled no token into Secret %s: %v", c.Name, v.Secret.SecretName, err)
			}
			saConfig = cp.RESTConfigForToken(string(token))
			who, err := kubernetes.NewForConfigOrDie(saConfig).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("container %s: whoami with its token: %v", c.Name, err)
			}
			if want := "system:serviceaccount:" + ns + ":" + owner; who.Status.UserInfo.Username != want || owner == pod.ServiceAccountName {
				t.Fatalf("container %s authenticates as %q (Secret for %q, pod's ServiceAccount %q); want its own ServiceAccount",
					c.Name, who.Status.UserInfo.Username, owner, pod.ServiceAccountName)
			}
		}
	}
	if saConfig == nil {
		t.Fatalf("container %s mounts no credentials at %s", c.Name, serviceAccountDir)
	}
	kubeconfig := filepath.Join(t.TempDir(), c.Name+".kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig, saConfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}
