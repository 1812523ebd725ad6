//go:build e2e

// Package approver tests stackward-approver on the real control plane:
// hollow kubelets with serverTLSBootstrap ask for serving certificates, the
// approver (with the chart's ServiceAccount and RBAC) verifies them against
// the simulated cloud, and the real kube-controller-manager signs them.
package approver

import (
	"context"
	"crypto/x509"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/approver"
)

func TestMain(m *testing.M) { framework.Main(m) }

const uninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"

func TestServingCertificatesAreVerifiedAgainstTheCloud(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conf := cloud.ReaderCloudConf(t) // the approver needs only the reader role

	first := cloud.CreateServer(t, "web-1", 1, "m1.small", "az-1")
	cloud.CreateServer(t, "web-2", 2, "m1.small", "az-2")
	liar := cloud.CreateServer(t, "web-3", 3, "m1.small", "az-1")
	cp.StartApprover(ctx, t, conf, approver.Options{})

	// Nodes that later subtests use live as long as the whole test.
	parent := t
	var web1 *framework.Node
	t.Run("a joining kubelet gets a CA-verified serving certificate for its cloud address before the CCM initialized it", func(t *testing.T) {
		web1 = cp.StartNode(parent, framework.NodeOptions{Name: "web-1", IP: framework.NodeIP(1)})
		csr, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, "web-1", time.Minute, func(c *certificatesv1.CertificateSigningRequest) bool {
			return len(c.Status.Certificate) > 0
		})
		if err != nil {
			t.Fatal(err)
		}
		approved := framework.Condition(csr, certificatesv1.CertificateApproved)
		if approved == nil || approved.Reason != approver.ReasonVerified {
			t.Fatalf("serving CSR not approved by stackward-approver: %s", framework.DescribeCSR(csr))
		}
		if !strings.Contains(approved.Message, first.ID) {
			t.Errorf("approval message %q does not name the instance %s it was verified against", approved.Message, first.ID)
		}
		cert, err := web1.WaitForServingCertificate(ctx, cp.ServingCACert, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		assertIPs(t, cert, framework.NodeIP(1))
		node, err := cp.Admin.CoreV1().Nodes().Get(ctx, "web-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !framework.HasTaint(node, uninitializedTaint) {
			t.Errorf("node web-1 is already initialized; the early-join case was not exercised")
		}
		assertEvent(ctx, t, cp, csr.Name, approver.ReasonVerified)
	})

	t.Run("a kubelet claiming another server's IP is denied with the offending IP and the cloud's addresses", func(t *testing.T) {
		// web-3 exists in the cloud, but its kubelet says it is web-2's
		// address (and serves on another port, as the address is taken).
		cp.StartNode(t, framework.NodeOptions{Name: "web-3", IP: framework.NodeIP(2), Port: 10251})
		csr, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, "web-3", time.Minute, func(c *certificatesv1.CertificateSigningRequest) bool {
			return framework.Condition(c, certificatesv1.CertificateDenied) != nil
		})
		if err != nil {
			t.Fatal(err)
		}
		denied := framework.Condition(csr, certificatesv1.CertificateDenied)
		for _, want := range []string{framework.NodeIP(2), liar.Addresses[0].IP} {
			if !strings.Contains(denied.Message, want) {
				t.Errorf("denial %q does not mention %s", denied.Message, want)
			}
		}
		if len(csr.Status.Certificate) > 0 {
			t.Errorf("a certificate was issued for a denied request")
		}
		assertEvent(ctx, t, cp, csr.Name, denied.Reason)
	})

	t.Run("during a cloud outage the request stays pending, and is approved after recovery", func(t *testing.T) {
		cloud.CreateServer(t, "web-4", 4, "m1.medium", "az-2")
		if err := cloud.Sim.SetFault(cloudsim.FaultRule{Service: "compute", Status: 503}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cloud.Sim.ClearFaults) // never leave the outage to later subtests
		node := cp.StartNode(t, framework.NodeOptions{Name: "web-4", IP: framework.NodeIP(4)})
		csr, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, "web-4", time.Minute, func(*certificatesv1.CertificateSigningRequest) bool { return true })
		if err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 12*time.Second, true, func(ctx context.Context) (bool, error) {
			c, err := cp.Admin.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil // a slow apiserver (or the poll's own deadline) is no verdict
			}
			if !framework.IsPending(c) {
				t.Fatalf("request decided while the cloud was down: %s", framework.DescribeCSR(c))
			}
			return false, nil
		})
		if !wait.Interrupted(err) {
			t.Fatal(err)
		}
		if calls := cloud.Sim.Calls(); calls["compute.servers.detail"]+calls["compute.servers.get"] == 0 {
			t.Fatalf("the approver never asked the cloud during the outage: %v", calls)
		}
		cloud.Sim.ClearFaults()
		if _, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, "web-4", 2*time.Minute, func(c *certificatesv1.CertificateSigningRequest) bool {
			return c.Name == csr.Name && len(c.Status.Certificate) > 0
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := node.WaitForServingCertificate(ctx, cp.ServingCACert, time.Minute); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("when the cloud moves a floating IP the renewed certificate carries the new address only", func(t *testing.T) {
		cp.StartCCM(ctx, t, cloud.CloudConf(t, "")) // the CCM writes: member
		oldIP, err := cloud.Sim.AttachFloatingIP(first.ID, framework.FloatingNetwork)
		if err != nil {
			t.Fatal(err)
		}
		waitForCertIPs(ctx, t, web1, cp.ServingCACert, framework.NodeIP(1), oldIP)
		if err := cloud.Sim.DetachFloatingIP(first.ID, oldIP); err != nil {
			t.Fatal(err)
		}
		newIP, err := cloud.Sim.AttachFloatingIP(first.ID, framework.FloatingNetwork)
		if err != nil {
			t.Fatal(err)
		}
		if newIP == oldIP {
			t.Fatalf("the simulator gave the same floating IP %s again; the test cannot tell old from new", newIP)
		}
		waitForCertIPs(ctx, t, web1, cp.ServingCACert, framework.NodeIP(1), newIP)
	})
}

// waitForCertIPs waits until the kubelet serves a certificate whose IP SANs
// are exactly ips.
func waitForCertIPs(ctx context.Context, t *testing.T, n *framework.Node, ca []byte, ips ...string) {
	t.Helper()
	slices.Sort(ips)
	var last []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		cert, err := n.ServingCertificate(ctx, ca)
		if err != nil {
			return false, nil
		}
		last = certIPs(cert)
		return slices.Equal(last, ips), nil
	})
	if err != nil {
		t.Fatalf("kubelet %s serves IPs %v, want %v: %v", n.Name, last, ips, err)
	}
}

func certIPs(cert *x509.Certificate) []string {
	var out []string
	for _, ip := range cert.IPAddresses {
		out = append(out, ip.String())
	}
	slices.Sort(out)
	return out
}

func assertIPs(t *testing.T, cert *x509.Certificate, ips ...string) {
	t.Helper()
	slices.Sort(ips)
	if got := certIPs(cert); !slices.Equal(got, ips) {
		t.Errorf("certificate IPs %v, want %v", got, ips)
	}
	if err := cert.VerifyHostname(ips[0]); err != nil {
		t.Errorf("certificate does not verify for %s: %v", ips[0], err)
	}
}

func assertEvent(ctx context.Context, t *testing.T, cp *framework.ControlPlane, csrName, reason string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := cp.Admin.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + csrName})
		if err != nil {
			return false, nil
		}
		for _, e := range events.Items {
			if e.Reason == reason && e.InvolvedObject.Kind == "CertificateSigningRequest" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no Event with reason %s on CSR %s: %v", reason, csrName, err)
	}
}
