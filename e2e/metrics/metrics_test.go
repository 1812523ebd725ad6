//go:build e2e

// Package metrics runs metrics-server (the release e2e/metricsserver
// builds, with its own manifests) against the lab's kubelets as
// docs/reference/kubelet-serving-ca-bundle.md says to: verifying their
// serving certificates with the kubelet-serving CA bundle the approver
// publishes, never with --kubelet-insecure-tls.
package metrics

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/approver"
	"github.com/stackward/stackward/pkg/pki"
)

func TestMain(m *testing.M) { framework.MetricsServerMain(m) }

// The settings docs/reference/kubelet-serving-ca-bundle.md gives
// metrics-server, on top of upstream's Deployment.
const (
	caMountPath = "/etc/kubelet-serving-ca"
	caVolume    = "kubelet-serving-ca"
)

var documentedArgs = []string{
	"--kubelet-certificate-authority=" + caMountPath + "/ca.crt",
	"--kubelet-preferred-address-types=InternalIP",
}

// ctbVolume is the documented projection of the ClusterTrustBundle.
func ctbVolume() corev1.Volume {
	return corev1.Volume{Name: caVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{
			Name: ptr.To(approver.CABundleClusterTrustBundle), Path: "ca.crt",
		}}},
	}}}
}

// TestMetricsServerVerifiesKubelets: upstream's metrics-server Deployment
// with the CA bundle projected from the ClusterTrustBundle reports every
// node (what `kubectl top nodes` shows), one given the wrong CA reports
// none, and through a rotation of the kubelet-serving CA done as
// documented (restart metrics-server once the bundle holds both CAs,
// before any kubelet moves) metrics keep flowing.
func TestMetricsServerVerifiesKubelets(t *testing.T) {
	start := time.Now()
	ms := framework.MetricsServerTool(t)
	// The approver signs, with the CA of the Secret `pki export` writes,
	// so a rotation needs no kube-controller-manager restart.
	cp := framework.ReplaceSharedControlPlane(t, framework.ControlPlaneOptions{ApproverSigns: true})
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	// The aggregator reaches metrics-server's endpoint directly (the lab
	// has no kube-proxy); Kubernetes before 1.37 serves ClusterTrustBundles
	// only when asked.
	flags := map[string]string{"enable-aggregator-routing": "true"}
	if _, served, err := cp.ServedClusterTrustBundleVersion(); err != nil {
		t.Fatal(err)
	} else if !served {
		flags["feature-gates"] = "ClusterTrustBundle=true"
		flags["runtime-config"] = "certificates.k8s.io/v1beta1/clustertrustbundles=true"
	}
	if err := cp.SetAPIServerFlags(ctx, flags); err != nil {
		t.Fatal(err)
	}
	gvr, served, err := cp.ServedClusterTrustBundleVersion()
	if err != nil || !served {
		t.Fatalf("the apiserver serves no ClusterTrustBundles (err %v) with %v", err, flags)
	}
	t.Logf("apiserver flags %v; ClusterTrustBundles served as %s", flags, gvr.GroupVersion())

	// The chart's CA Secret volume, written as `pki export | kubectl apply`
	// updates the Secret.
	pkiDir := filepath.Join(framework.KubernetesDir, "pki")
	caSecret := t.TempDir()
	export := func(exp func(string) ([]byte, error)) {
		t.Helper()
		manifest, err := exp(pkiDir)
		if err != nil {
			t.Fatal(err)
		}
		var s corev1.Secret
		if err := yaml.Unmarshal(manifest, &s); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(caSecret)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if _, ok := s.Data[e.Name()]; !ok {
				if err := os.Remove(filepath.Join(caSecret, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
		for k, v := range s.Data {
			if err := os.WriteFile(filepath.Join(caSecret, k), v, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	export(pki.Export)
	conf := cloud.CloudConf(t, "")
	// The CCM first: each applies the chart's RBAC, the approver's with
	// approver.signer.enabled.
	cp.StartCCM(ctx, t, conf)
	stopApprover, err := cp.RunApproverWith(ctx, conf, approver.Options{}, func(c *approver.Config) {
		c.SignWithCADir = caSecret
		c.CABundle = approver.CABundle{
			Dir: caSecret, ConfigMapNamespace: framework.ChartNamespace, ConfigMapName: approver.DefaultCABundleConfigMap,
			ClusterTrustBundleName: approver.CABundleClusterTrustBundle, Interval: time.Second,
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopApprover)

	names := []string{"metrics-1", "metrics-2", "metrics-3"}
	var nodes []*framework.Node
	for i, name := range names {
		cloud.CreateServer(t, name, 70+i, "m1.small", "az-1")
		nodes = append(nodes, cp.StartNode(t, framework.NodeOptions{Name: name, IP: framework.NodeIP(70 + i)}))
	}
	for _, n := range nodes {
		if _, err := n.WaitForServingCertificate(ctx, cp.ServingCACert, 90*time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := cp.WaitForNode(ctx, n.Name, 90*time.Second, func(n *corev1.Node) bool {
			return !framework.HasTaint(n, "node.cloudprovider.kubernetes.io/uninitialized") && hasInternalIP(n)
		}); err != nil {
			t.Fatalf("node %s was not initialized with an InternalIP: %v", n.Name, err)
		}
	}
	published := waitPublished(ctx, t, cp, gvr.Version, cp.ServingCACert)

	// What metrics-server scrapes: each kubelet's resource metrics, here
	// through the apiserver's verified connection to it.
	for _, name := range names {
		var body []byte
		err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			body, err = cp.Admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/" + name + "/proxy/metrics/resource").DoRaw(ctx)
			return err == nil && bytes.Contains(body, []byte("\nnode_cpu_usage_seconds_total ")) &&
				bytes.Contains(body, []byte("\nnode_memory_working_set_bytes ")), nil
		})
		if err != nil {
			t.Fatalf("kubelet %s serves no node CPU and memory on /metrics/resource: %v\n%s", name, err, body)
		}
	}

	ms.Install(ctx, t, cp)
	bins := map[string]string{"metrics-server": ms.Bin}
	podSpec := func(vol corev1.Volume) corev1.PodSpec {
		spec := *ms.Deployment(t).Spec.Template.Spec.DeepCopy()
		c := &spec.Containers[0]
		var args []string
		for _, a := range c.Args {
			switch {
			case strings.HasPrefix(a, "--kubelet-preferred-address-types="):
			case a == "--kubelet-insecure-tls":
				t.Fatalf("upstream's Deployment has %s", a)
			default:
				args = append(args, a)
			}
		}
		// The lab: the pod's own address (upstream's scrape interval, 15 s,
		// is kept).
		c.Args = append(append(args, documentedArgs...), "--bind-address="+framework.MetricsServerIP)
		c.VolumeMounts = append(c.VolumeMounts,
			corev1.VolumeMount{Name: caVolume, MountPath: caMountPath, ReadOnly: true},
			// What ServiceAccount admission adds to every pod.
			corev1.VolumeMount{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true})
		spec.Volumes = append(spec.Volumes, vol, corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
		}}})
		return spec
	}
	startPod := func(t *testing.T, vol corev1.Volume) *framework.Pod {
		t.Helper()
		pod := cp.StartPod(ctx, t, framework.MetricsServerNamespace, podSpec(vol), bins)
		t.Cleanup(pod.Stop)
		return pod
	}
	mountedCerts := func(t *testing.T, pod *framework.Pod) int {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(pod.Volumes[caVolume], "ca.crt"))
		if err != nil {
			t.Fatal(err)
		}
		return len(parseCerts(t, data))
	}

	t.Run("a: the metrics API answers for every joined node", func(t *testing.T) {
		phase := time.Now()
		pod := startPod(t, ctbVolume())
		if n := mountedCerts(t, pod); n != 1 {
			t.Fatalf("the projected bundle holds %d certificates, want the one CA", n)
		}
		usage := waitMetrics(ctx, t, cp, pod, time.Now(), names, nil, 2*time.Minute)
		logTop(t, usage)
		t.Logf("metrics for %d nodes %v after metrics-server started", len(names), time.Since(phase).Round(time.Second))
		pod.Stop()
	})
	if t.Failed() {
		return
	}

	t.Run("b: with the cluster CA instead (kube-root-ca.crt), scraping fails and no node has metrics", func(t *testing.T) {
		wrong := corev1.Volume{Name: caVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
		}}}
		pod := startPod(t, wrong)
		// Every kubelet refused for its certificate, more than one scrape
		// each, and all the while no node listed.
		var failures map[string]int
		err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			if err := pod.Running(); err != nil {
				return false, err
			}
			if usage, err := cp.NodeMetrics(ctx); err == nil {
				for _, name := range names {
					if u, ok := usage[name]; ok {
						return false, fmt.Errorf("metrics-server trusting the wrong CA reports node %s: %v", name, u)
					}
				}
			}
			failures = unknownAuthority(t, pod, names)
			for _, name := range names {
				if failures[name] < 2 {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("%v; verification failures by node: %v", err, failures)
		}
		usage, err := cp.NodeMetrics(ctx)
		t.Logf("wrong CA: x509 unknown-authority scrape failures by node %v; metrics API: %d nodes listed (err %v)", failures, len(usage), err)
		pod.Stop()
	})
	if t.Failed() {
		return
	}

	t.Run("c: through a rotation of the kubelet-serving CA, as documented, metrics keep flowing", func(t *testing.T) {
		phase := time.Now()
		before := startPod(t, ctbVolume())
		waitMetrics(ctx, t, cp, before, time.Now(), names, nil, 2*time.Minute)

		// Step 2 of the rotation: the Secret holds the current pair and
		// the bundle of both; the approver publishes the bundle.
		res, err := pki.Rotate(pki.RotateOptions{Dir: pkiDir})
		if err != nil {
			t.Fatal(err)
		}
		export(pki.Export)
		published = waitPublished(ctx, t, cp, gvr.Version, published, res.Next.CertPEM)
		// The kubelet updates the running pod's projected file in place.
		if err := before.SyncVolumes(ctx, cp); err != nil {
			t.Fatal(err)
		}
		if n := mountedCerts(t, before); n != 2 {
			t.Fatalf("the projected bundle holds %d certificates after pki rotate, want 2", n)
		}
		// metrics-server read its CA file once, at start: a kubelet that
		// moves to the next CA now is refused by it, whatever the file says.
		// This is why the documented order restarts it first.
		export(pki.ExportNext)
		renew(ctx, t, nodes[0], res.Next.CertPEM)
		var refused int
		if err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(context.Context) (bool, error) {
			refused = unknownAuthority(t, before, names)[names[0]]
			return refused >= 2, nil
		}); err != nil {
			t.Fatalf("metrics-server, its CA file now holding both CAs, did not refuse %s's next-CA certificate twice (%d): does it reload the file?", names[0], refused)
		}
		waitMetrics(ctx, t, cp, before, time.Now(), names[1:], names[:1], 2*time.Minute)
		t.Logf("without a restart, metrics-server kept its old CA: %s (next CA) dropped out, the others stayed", names[0])
		before.Stop()

		// The documented step: restart metrics-server once its mounted
		// bundle holds both CAs (here after the first kubelet already
		// moved, to show the restart is what brings it back).
		after := startPod(t, ctbVolume())
		if n := mountedCerts(t, after); n != 2 {
			t.Fatalf("the restarted pod's bundle holds %d certificates, want 2", n)
		}
		waitMetrics(ctx, t, cp, after, time.Now(), names, nil, 2*time.Minute)
		for _, n := range nodes[1:] {
			renew(ctx, t, n, res.Next.CertPEM)
			waitMetrics(ctx, t, cp, after, time.Now(), names, nil, 2*time.Minute)
		}

		// --finish: the bundle holds the new CA alone.
		if _, err := pki.Finish(pkiDir); err != nil {
			t.Fatal(err)
		}
		export(pki.Export)
		waitPublished(ctx, t, cp, gvr.Version, res.Next.CertPEM)
		after.Stop()
		final := startPod(t, ctbVolume())
		if n := mountedCerts(t, final); n != 1 {
			t.Fatalf("after --finish the bundle holds %d certificates, want the new CA alone", n)
		}
		usage := waitMetrics(ctx, t, cp, final, time.Now(), names, nil, 2*time.Minute)
		logTop(t, usage)
		t.Logf("rotation with %d kubelets, metrics-server restarted twice: %v", len(nodes), time.Since(phase).Round(time.Second))
	})
	t.Logf("whole test: %v", time.Since(start).Round(time.Second))
}

func hasInternalIP(n *corev1.Node) bool {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return true
		}
	}
	return false
}

// renew makes the kubelet of n ask for a new serving certificate and waits
// until it serves one of ca.
func renew(ctx context.Context, t *testing.T, n *framework.Node, ca []byte) {
	t.Helper()
	if err := n.RenewServingCertificate(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.WaitForServingCertificate(ctx, ca, 90*time.Second); err != nil {
		t.Fatalf("%s did not get a certificate of the next CA: %v", n.Name, err)
	}
}

// waitMetrics waits until the metrics API lists every node of present with
// CPU and memory usage above zero from a sample taken after since, and
// none of absent, and returns the listing. Two scrapes are needed before a
// node's CPU rate exists.
func waitMetrics(ctx context.Context, t *testing.T, cp *framework.ControlPlane, pod *framework.Pod, since time.Time, present, absent []string, timeout time.Duration) map[string]framework.NodeUsage {
	t.Helper()
	var usage map[string]framework.NodeUsage
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		if err := pod.Running(); err != nil {
			return false, err
		}
		usage, last = cp.NodeMetrics(ctx)
		if last != nil {
			return false, nil
		}
		for _, name := range present {
			u, ok := usage[name]
			if !ok || u.CPU.Sign() <= 0 || u.Memory.Sign() <= 0 || !u.Timestamp.After(since) {
				last = fmt.Errorf("node %s: %+v (listed %t)", name, u, ok)
				return false, nil
			}
		}
		for _, name := range absent {
			if _, ok := usage[name]; ok {
				last = fmt.Errorf("node %s still listed", name)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("metrics for %v (and none for %v): %v; last: %v\n%s", present, absent, err, last, pod.Procs[0].Tail(3000))
	}
	return usage
}

// unknownAuthority counts, by node, metrics-server's failed scrapes of it
// whose cause is an unverifiable serving certificate.
func unknownAuthority(t *testing.T, pod *framework.Pod, names []string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(pod.Procs[0].LogPath)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, "Failed to scrape node") || !strings.Contains(line, "x509: certificate signed by unknown authority") {
			continue
		}
		for _, name := range names {
			if strings.Contains(line, `node="`+name+`"`) {
				out[name]++
			}
		}
	}
	return out
}

// waitPublished waits until the ConfigMap and the ClusterTrustBundle hold
// exactly the CA certificates cas (PEM, each may hold several), and returns
// them as one PEM.
func waitPublished(ctx context.Context, t *testing.T, cp *framework.ControlPlane, version string, cas ...[]byte) []byte {
	t.Helper()
	want := map[string]bool{}
	var all []byte
	for _, ca := range cas {
		for _, c := range parseCerts(t, ca) {
			if !want[string(c.Raw)] {
				want[string(c.Raw)] = true
				all = append(all, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
			}
		}
	}
	dyn, err := dynamic.NewForConfig(cp.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	gvr := framework.ClusterTrustBundleVersions[0]
	for _, v := range framework.ClusterTrustBundleVersions {
		if v.Version == version {
			gvr = v
		}
	}
	same := func(data []byte) bool {
		got := parseCerts(t, data)
		if len(got) != len(want) {
			return false
		}
		for _, c := range got {
			if !want[string(c.Raw)] {
				return false
			}
		}
		return true
	}
	var cmData, ctbData string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cm, err := cp.Admin.CoreV1().ConfigMaps(framework.ChartNamespace).Get(ctx, approver.DefaultCABundleConfigMap, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		ctb, err := dyn.Resource(gvr).Get(ctx, approver.CABundleClusterTrustBundle, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		cmData = cm.Data[approver.CABundleKey]
		ctbData, _ = ctb.Object["spec"].(map[string]any)["trustBundle"].(string)
		return same([]byte(cmData)) && same([]byte(ctbData)), nil
	})
	if err != nil {
		t.Fatalf("the approver did not publish the %d CA certificates: ConfigMap %d, ClusterTrustBundle %d: %v",
			len(want), len(parseCerts(t, []byte(cmData))), len(parseCerts(t, []byte(ctbData))), err)
	}
	return all
}

func parseCerts(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for rest := bytes.TrimSpace(data); len(rest) > 0; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatalf("parse certificate: %v", err)
		}
		out = append(out, c)
	}
	return out
}

// logTop logs the listing as `kubectl top nodes` prints it.
func logTop(t *testing.T, usage map[string]framework.NodeUsage) {
	t.Helper()
	var names []string
	for n := range usage {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s %-10s %-10s %s\n", "NAME", "CPU(cores)", "MEMORY", "WINDOW")
	for _, n := range names {
		u := usage[n]
		fmt.Fprintf(&b, "%-12s %-10s %-10s %s\n", n, fmt.Sprintf("%dm", u.CPU.MilliValue()), fmt.Sprintf("%dMi", u.Memory.Value()/(1<<20)), u.Window)
	}
	t.Logf("metrics API (kubectl top nodes):\n%s", b.String())
}
