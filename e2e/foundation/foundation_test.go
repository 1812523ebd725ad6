//go:build e2e

// Package foundation proves the lab is real: kubelets TLS-bootstrap against
// a kubeadm-built control plane, and their serving certificates stay pending
// because nothing in Kubernetes approves them (the problem Stackward solves).
package foundation

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

const uninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"

func TestKubeletJoinsWithABootstrapTokenAndItsServingCSRStaysPending(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	t.Logf("control plane ready in %s", cp.StartupTime.Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	node := cp.StartNode(t, framework.NodeOptions{Name: "worker-1", IP: framework.NodeIP(1)})

	// (a) The client certificate: requested with the bootstrap token,
	// auto-approved and signed by the real kube-controller-manager.
	client, err := cp.WaitForCSR(ctx, certificatesv1.KubeAPIServerClientKubeletSignerName, node.Name, time.Minute, func(c *certificatesv1.CertificateSigningRequest) bool {
		return len(c.Status.Certificate) > 0
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, cp.Logs())
	}
	if !strings.HasPrefix(client.Spec.Username, "system:bootstrap:") {
		t.Errorf("client CSR requested by %q, want the bootstrap token's user system:bootstrap:<id>", client.Spec.Username)
	}
	if framework.Condition(client, certificatesv1.CertificateApproved) == nil {
		t.Errorf("client CSR has no Approved condition: %+v", client.Status.Conditions)
	}

	registered, err := cp.WaitForNode(ctx, node.Name, time.Minute, func(n *corev1.Node) bool { return true })
	if err != nil {
		t.Fatalf("node never registered: %v\n%s", err, node.Process.Tail(4000))
	}
	if !framework.HasTaint(registered, uninitializedTaint) {
		t.Errorf("node %s registered without taint %s: %+v", node.Name, uninitializedTaint, registered.Spec.Taints)
	}
	if registered.Spec.ProviderID != "" {
		t.Errorf("node registered with providerID %q; with --cloud-provider=external it is the CCM's to set", registered.Spec.ProviderID)
	}

	// (b) The serving certificate: requested by the node itself for its
	// name and --node-ip, and left pending by kube-controller-manager.
	serving, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, node.Name, time.Minute, func(*certificatesv1.CertificateSigningRequest) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if serving.Spec.Username != "system:node:"+node.Name {
		t.Errorf("serving CSR requested by %q, want system:node:%s", serving.Spec.Username, node.Name)
	}
	stillPending := func(ctx context.Context) (bool, error) {
		c, err := cp.Admin.CertificatesV1().CertificateSigningRequests().Get(ctx, serving.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil // a slow apiserver is no verdict; the deadline ends the poll
		}
		if !framework.IsPending(c) {
			t.Fatalf("serving CSR %s was decided without an approver: %+v", c.Name, c.Status.Conditions)
		}
		return false, nil
	}
	// Give kube-controller-manager's csrapproving and csrsigning controllers
	// ample time to (wrongly) act; the poll returns only by its deadline.
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 6*time.Second, true, stillPending)
	if !wait.Interrupted(err) {
		t.Fatalf("watching serving CSR: %v", err)
	}
	if _, err := node.ServingCertificate(ctx, cp.ServingCACert); err == nil {
		t.Errorf("kubelet serves a CA-verified certificate although its CSR is pending")
	}
}

func TestEveryKubeadmFileInBootstrapValidates(t *testing.T) {
	kubeadm := framework.Tool(t, "kubeadm")
	files, err := filepath.Glob(filepath.Join(framework.RepoRoot(), "bootstrap", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no kubeadm files in bootstrap/: %v", err)
	}
	validated := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !kubeadmDocument.Match(data) {
			continue
		}
		validated++
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := runCommand(kubeadm, "config", "validate", "--config", f)
			if err != nil {
				t.Errorf("kubeadm config validate %s: %v\n%s", f, err, out)
			}
		})
	}
	if validated < 2 {
		t.Errorf("validated %d kubeadm files, want at least the init and join configurations", validated)
	}
}

// kubeadmDocument matches a file with a top-level kubeadm document (not,
// say, a cloud-init file that embeds one).
var kubeadmDocument = regexp.MustCompile(`(?m)^apiVersion: kubeadm\.k8s\.io/`)

func runCommand(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}
