//go:build e2e

package approver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/approver"
)

// TestTheApproverHoldsAgainstAMisbehavingNode: what one compromised node
// (or the holder of a bootstrap token) can send, and what an operator can
// misconfigure, against a real apiserver.
func TestTheApproverHoldsAgainstAMisbehavingNode(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conf := cloud.ReaderCloudConf(t)
	parent := t

	t.Run("a control-plane host's own address listed as a control-plane endpoint is approved for it, and the listing is reported once naming node and value", func(t *testing.T) {
		// As an operator following the old chart comment would set it: the
		// apiserver address and a control-plane host's advertise address.
		hostIP := framework.NodeIP(31)
		stop, err := cp.RunApprover(ctx, conf, approver.Options{Policy: approver.Policy{ControlPlaneEndpoints: []netip.Addr{
			netip.MustParseAddr(framework.ControlPlaneIP), netip.MustParseAddr(hostIP)}}})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		cloud.CreateServer(t, "cp-host-1", 31, "m1.small", "az-1")
		node := cp.StartNode(parent, framework.NodeOptions{Name: "cp-host-1", IP: hostIP})
		csr, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, "cp-host-1", time.Minute, func(c *certificatesv1.CertificateSigningRequest) bool {
			return !framework.IsPending(c)
		})
		if err != nil {
			t.Fatal(err)
		}
		if c := framework.Condition(csr, certificatesv1.CertificateApproved); c == nil || c.Reason != approver.ReasonVerified {
			t.Fatalf("the control-plane host's request: %s; want approved for its own address", framework.DescribeCSR(csr))
		}
		if _, err := node.WaitForServingCertificate(ctx, cp.ServingCACert, time.Minute); err != nil {
			t.Fatal(err)
		}
		assertEvent(ctx, t, cp, csr.Name, approver.ReasonControlPlaneEndpointIsNodeAddress)
		events, err := cp.Admin.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + approver.ReasonControlPlaneEndpointIsNodeAddress})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range events.Items {
			n += int(max(e.Count, 1))
			if !strings.Contains(e.Message, "node cp-host-1") || !strings.Contains(e.Message, hostIP) || e.Type != corev1.EventTypeWarning {
				t.Errorf("%s Event %q does not name the node and the address", e.Type, e.Message)
			}
		}
		if n != 1 {
			t.Errorf("%d %s Events, want one", n, approver.ReasonControlPlaneEndpointIsNodeAddress)
		}
	})

	t.Run("a node identity without a Node gets nothing until its Node registers", func(t *testing.T) {
		stop, err := cp.RunApprover(ctx, conf, approver.Options{WaitRecheck: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		// A project server that is no node; someone holding a bootstrap
		// token became system:node:<its name>.
		cloud.CreateServer(t, "bastion-1", 32, "m1.small", "az-1")
		ghost := asNode(t, cp, "bastion-1")
		name := requestServing(ctx, t, ghost, "bastion-1", []string{framework.NodeIP(32)}, 0)
		assertEvent(ctx, t, cp, name, approver.ReasonNodeNotRegistered)
		c, err := cp.Admin.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !framework.IsPending(c) {
			t.Fatalf("a request without a Node was decided: %s", framework.DescribeCSR(c))
		}
		// The Node registers (as its kubelet would, uninitialized): the
		// request is looked at again at once, not at the hourly recheck.
		if _, err := ghost.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bastion-1"},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule}}}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = cp.Admin.CoreV1().Nodes().Delete(context.Background(), "bastion-1", metav1.DeleteOptions{})
		}()
		if _, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, "bastion-1", 30*time.Second, func(c *certificatesv1.CertificateSigningRequest) bool {
			return c.Name == name && framework.Condition(c, certificatesv1.CertificateApproved) != nil
		}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a flood of ~1 MiB requests from one node leaves the approver's heap flat and another node is approved", func(t *testing.T) {
		stop, err := cp.RunApprover(ctx, conf, approver.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		cloud.CreateServer(t, "flooder-1", 33, "m1.small", "az-1")
		flooder := asNode(t, cp, "flooder-1")
		if _, err := flooder.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "flooder-1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = cp.Admin.CoreV1().Nodes().Delete(context.Background(), "flooder-1", metav1.DeleteOptions{})
		}()
		// The chart's admission policy would refuse these; it is not
		// installed until the next subtest (as on a cluster whose operator
		// turned it off): this is the approver's own defense. 200 keep CI
		// quick; make bench (padded_flood_500_x_1mib) sends 500.
		before := heapAfterGC()
		const flood, size = 200, 1 << 20
		var names []string
		for range flood {
			names = append(names, requestServing(ctx, t, flooder, "flooder-1", []string{framework.NodeIP(33)}, size))
		}
		defer func() {
			for _, n := range names {
				_ = cp.Admin.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), n, metav1.DeleteOptions{})
			}
		}()
		cloud.CreateServer(t, "honest-1", 34, "m1.small", "az-2")
		honest := cp.StartNode(t, framework.NodeOptions{Name: "honest-1", IP: framework.NodeIP(34)})
		start := time.Now()
		if _, err := honest.WaitForServingCertificate(ctx, cp.ServingCACert, time.Minute); err != nil {
			t.Fatal(err)
		}
		t.Logf("another node got its serving certificate %s after the flood", time.Since(start).Round(time.Millisecond))
		// The flood's first requests are denied for their size (up to the
		// node's denial budget), the rest left pending, unwritten.
		var denied int
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			denied = 0
			for _, n := range names {
				c, err := cp.Admin.CertificatesV1().CertificateSigningRequests().Get(ctx, n, metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				if d := framework.Condition(c, certificatesv1.CertificateDenied); d != nil {
					if d.Reason != approver.ReasonRequestTooLarge {
						return false, fmt.Errorf("%s denied %s (%s), want %s", n, d.Reason, d.Message, approver.ReasonRequestTooLarge)
					}
					denied++
				} else if !framework.IsPending(c) {
					return false, fmt.Errorf("a padded request was decided otherwise: %s", framework.DescribeCSR(c))
				}
			}
			return denied == approver.DefaultMaxDenialsPerNode, nil
		})
		if err != nil {
			t.Fatalf("%d of the flood denied: %v", denied, err)
		}
		grown := heapAfterGC() - before
		t.Logf("heap after %d requests of %d KiB: %+d MiB", flood, size>>10, grown>>20)
		// Whole, they would be 200 MiB in the approver's cache alone.
		const bound = 32 << 20
		if grown > bound {
			t.Errorf("the heap grew by %d MiB under the flood; want under %d MiB", grown>>20, bound>>20)
		}
	})

	t.Run("the chart's admission policy refuses a padded request from a node and admits a kubelet's", func(t *testing.T) {
		cp.Apply(t, framework.RenderChart(t, "templates/csr-admission-policy.yaml"))
		defer func() {
			bg := context.Background()
			_ = cp.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(bg, framework.ChartRelease+"-kubelet-serving-csr-size", metav1.DeleteOptions{})
			_ = cp.Admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(bg, framework.ChartRelease+"-kubelet-serving-csr-size", metav1.DeleteOptions{})
		}()
		node := asNode(t, cp, "padder-1")
		// The policy takes effect once the apiserver has loaded it.
		var refusal error
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			name, err := createServing(ctx, node, "padder-1", []string{framework.NodeIP(35)}, 64<<10)
			if err == nil {
				_ = cp.Admin.CertificatesV1().CertificateSigningRequests().Delete(ctx, name, metav1.DeleteOptions{})
				return false, nil
			}
			refusal = err
			return true, nil
		})
		if err != nil {
			t.Fatalf("a 64 KiB request from a node was still admitted: %v", err)
		}
		if !strings.Contains(refusal.Error(), "at most 16384 are admitted") {
			t.Errorf("refusal %q does not say the limit", refusal)
		}
		// A kubelet's small body padded in its metadata instead: 200 KiB
		// of annotations, or one label (a kubelet sets neither).
		for what, meta := range map[string]metav1.ObjectMeta{
			"200 KiB of annotations": {GenerateName: "csr-", Annotations: map[string]string{"example.com/pad": strings.Repeat("a", 200<<10)}},
			"one label":              {GenerateName: "csr-", Labels: map[string]string{"example.com/pad": "x"}},
		} {
			name, err := createServingMeta(ctx, node, "padder-1", []string{framework.NodeIP(35)}, 0, meta)
			if err == nil {
				_ = cp.Admin.CertificatesV1().CertificateSigningRequests().Delete(ctx, name, metav1.DeleteOptions{})
				t.Errorf("a request from a node with %s was admitted", what)
			} else if !strings.Contains(err.Error(), "a kubelet sends none, and none are admitted from a node") {
				t.Errorf("refusal of a request with %s: %q does not say why", what, err)
			}
		}
		name, err := createServing(ctx, node, "padder-1", []string{framework.NodeIP(35)}, 0)
		if err != nil {
			t.Fatalf("a kubelet-sized request was refused: %v", err)
		}
		_ = cp.Admin.CertificatesV1().CertificateSigningRequests().Delete(ctx, name, metav1.DeleteOptions{})
	})
}

func heapAfterGC() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// asNode is a client authenticated as system:node:<name> (the cluster
// admin impersonating it, as a bootstrapped kubelet's certificate would be).
func asNode(t *testing.T, cp *framework.ControlPlane, name string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(cp.AdminConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:node:" + name, Groups: []string{"system:nodes", "system:authenticated"}}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// requestServing creates a kubelet-serving CSR for node with ips, padded
// to about pad bytes (0: a kubelet's), and returns its name.
func requestServing(ctx context.Context, t *testing.T, client kubernetes.Interface, node string, ips []string, pad int) string {
	t.Helper()
	name, err := createServing(ctx, client, node, ips, pad)
	if err != nil {
		t.Fatal(err)
	}
	return name
}

func createServing(ctx context.Context, client kubernetes.Interface, node string, ips []string, pad int) (string, error) {
	return createServingMeta(ctx, client, node, ips, pad, metav1.ObjectMeta{GenerateName: "csr-"})
}

// createServingMeta is createServing with the request's metadata (a
// kubelet's is a generateName only).
func createServingMeta(ctx context.Context, client kubernetes.Interface, node string, ips []string, pad int, meta metav1.ObjectMeta) (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	// Padding as a long DNS SAN list keeps the request valid and signed;
	// the PEM is 4/3 of the DER (and etcd takes objects up to 1.5 MiB).
	for size := 0; size < pad*3/4; size += 60 {
		tmpl.DNSNames = append(tmpl.DNSNames, fmt.Sprintf("%s-%056d", node[:1], size))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return "", err
	}
	csr, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: meta,
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeletServingSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create CSR as %s: %w", node, err)
	}
	return csr.Name, nil
}
