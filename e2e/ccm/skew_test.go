//go:build e2e

package ccm

import (
	"context"
	"debug/buildinfo"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/approver"
)

// TestAKubeletThreeMinorsOlderJoinsMidUpgrade is a node that was not yet
// upgraded when the control plane went to 1.37: a 1.34 kubelet, the oldest
// the version skew policy allows. It joins with a bootstrap token, gets a
// serving certificate that stackward-approver verified against the cloud, and
// is initialized by the CCM, exactly as a kubelet of the control plane's own
// minor is.
func TestAKubeletThreeMinorsOlderJoinsMidUpgrade(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// The skew is real: the binary is built from k8s.io/kubernetes 1.34 and
	// the apiserver is 1.37 (the lab's, not what this test assumes).
	if v := kubernetesModuleVersion(t, framework.Tool(t, framework.OldestKubelet)); !strings.HasPrefix(v, "v1.34.") {
		t.Fatalf("%s is built from k8s.io/kubernetes %s, want v1.34.x", framework.OldestKubelet, v)
	}
	server, err := cp.Admin.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if server.Major != "1" || server.Minor != "37" {
		t.Fatalf("the lab's apiserver is %s, want 1.37", server.GitVersion)
	}

	const name = "upgrade-old-1"
	srv := cloud.CreateServer(t, name, 11, "m1.small", "az-2")
	conf := cloud.ReaderCloudConf(t) // the approver and the node controllers only read
	cp.StartApprover(ctx, t, conf, approver.Options{})
	cp.StartCCM(ctx, t, conf)
	node := cp.StartNode(t, framework.NodeOptions{Name: name, IP: framework.NodeIP(11), Kubelet: framework.OldestKubelet})

	t.Run("it registers as a 1.34 kubelet", func(t *testing.T) {
		n, err := cp.WaitForNode(ctx, name, 90*time.Second, func(n *corev1.Node) bool { return n.Status.NodeInfo.KubeletVersion != "" })
		if err != nil {
			t.Fatal(err)
		}
		if v := n.Status.NodeInfo.KubeletVersion; !strings.HasPrefix(v, "v1.34.") {
			t.Errorf("node %s reports kubelet %s, want v1.34.x", name, v)
		}
	})

	t.Run("its serving certificate is approved by stackward-approver and verifies for its cloud address", func(t *testing.T) {
		csr, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, name, 90*time.Second, func(c *certificatesv1.CertificateSigningRequest) bool {
			return len(c.Status.Certificate) > 0 || framework.Condition(c, certificatesv1.CertificateDenied) != nil
		})
		if err != nil {
			t.Fatal(err)
		}
		approved := framework.Condition(csr, certificatesv1.CertificateApproved)
		if approved == nil || approved.Reason != approver.ReasonVerified || !strings.Contains(approved.Message, srv.ID) {
			t.Fatalf("serving CSR of the 1.34 kubelet not verified against instance %s: %s", srv.ID, framework.DescribeCSR(csr))
		}
		cert, err := node.WaitForServingCertificate(ctx, cp.ServingCACert, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var ips []string
		for _, ip := range cert.IPAddresses {
			ips = append(ips, ip.String())
		}
		if !slices.Equal(ips, []string{framework.NodeIP(11)}) || !slices.Contains(cert.DNSNames, name) {
			t.Errorf("served certificate has IPs %v and names %v, want [%s] and %s", ips, cert.DNSNames, framework.NodeIP(11), name)
		}
	})

	t.Run("the CCM initializes it as the cloud describes it", func(t *testing.T) {
		want := expectedAddresses(srv)
		n, err := cp.WaitForNode(ctx, name, 90*time.Second, func(n *corev1.Node) bool {
			return n.Spec.ProviderID != "" && !framework.HasTaint(n, uninitializedTaint) && slices.Equal(addressStrings(n.Status.Addresses), want)
		})
		if err != nil {
			if n == nil {
				t.Fatal(err)
			}
			t.Fatalf("%v; node has providerID %q, taints %v, addresses %v, want addresses %v", err, n.Spec.ProviderID, n.Spec.Taints, n.Status.Addresses, want)
		}
		if want := "openstack:///" + srv.ID; n.Spec.ProviderID != want {
			t.Errorf("providerID %q, want %q", n.Spec.ProviderID, want)
		}
		if n.Labels[corev1.LabelTopologyZone] != "az-2" || n.Labels[corev1.LabelInstanceTypeStable] != "m1.small" {
			t.Errorf("node labelled zone %q type %q, want az-2 and m1.small", n.Labels[corev1.LabelTopologyZone], n.Labels[corev1.LabelInstanceTypeStable])
		}
	})
}

// kubernetesModuleVersion is the k8s.io/kubernetes version a binary was built
// from, read from its embedded build information.
func kubernetesModuleVersion(t *testing.T, bin string) string {
	t.Helper()
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("build info of %s: %v", bin, err)
	}
	for _, dep := range info.Deps {
		if dep.Path == "k8s.io/kubernetes" {
			return dep.Version
		}
	}
	t.Fatalf("%s was not built from k8s.io/kubernetes", bin)
	return ""
}
