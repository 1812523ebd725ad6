//go:build e2e

package realcloud

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/approver"
)

// TestASubportAddressIsPublishedAndCertified is a node whose cluster
// network arrives on a VLAN subport, on each cloud: a project member puts a
// trunk on the running server's port (real Neutron's trunk plugin, OVN
// driver) with a port of another network as VLAN 100, and the kubelet's
// --node-ip is that subport's address. Nova does not list it (a subport's
// device_id is not the server), so without reading trunks the CCM's
// addresses would not hold the kubelet's node IP (the cloud node controller
// then refuses to initialize the Node) and the approver would deny the
// kubelet's serving certificate. With them, the Node is initialized with
// the subport's address as its InternalIP, its kubelet is certified for it,
// and an address on no port of the server is still denied.
func TestASubportAddressIsPublishedAndCertified(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	for _, b := range framework.Backends(t) {
		t.Run(b.Cloud.Name(), func(t *testing.T) { subportAgainstCloud(t, cp, b) })
	}
}

func subportAgainstCloud(t *testing.T, cp *framework.ControlPlane, b framework.Backend) {
	cloud := b.Cloud
	trunker, ok := cloud.(framework.Trunker)
	if !ok {
		t.Fatalf("backend %s cannot make trunks", cloud.Name())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	idx := b.FirstNode + 70
	name := cloud.Name() + "-trunk"
	fixed := framework.NodeIP(idx)
	srv := cloud.CreateServer(t, name, idx, "m1.small", "az-1")
	// Each backend its own VLAN subnet: the kubelets of both hold their
	// subport's address on the lab's loopback.
	vlanNet := fmt.Sprintf("192.168.%d", 100+b.FirstNode/100)
	subportID, subportIP, trunkJSON := trunker.AddVLANSubport(t, srv.ID, vlanNet+".0/24", 100)
	t.Logf("%s: trunk as created: %s", cloud.Name(), trunkJSON)
	if rc, real := cloud.(*framework.RealCloud); real {
		t.Logf("%s: subport %s", cloud.Name(), rc.PortAsAdmin(t, subportID))
	}
	if now, _ := cloud.GetServer(t, srv.ID); slices.Contains(now.FixedIPs, subportIP) {
		t.Fatalf("Nova lists the subport's %s for the server: the test would not show that the subport is read", subportIP)
	}

	cp.StartCCM(ctx, t, cloud.ReaderCloudConf(t))                          // node controllers only read: reader
	cp.StartApprover(ctx, t, cloud.ReaderCloudConf(t), approver.Options{}) // the approver only reads: reader
	cp.DeleteNodeAtEnd(t, name)
	deleteCSRsAtEnd(t, cp, name)
	cp.StartNode(t, framework.NodeOptions{Name: name, IP: subportIP})

	t.Run("the CCM initializes the Node with the subport's address as its InternalIP", func(t *testing.T) {
		want := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: subportIP}
		n, err := cp.WaitForNode(ctx, name, 3*time.Minute, func(n *corev1.Node) bool {
			return n.Spec.ProviderID == "openstack:///"+srv.ID && !framework.HasTaint(n, framework.UninitializedTaint) &&
				slices.Contains(n.Status.Addresses, want)
		})
		if err != nil {
			var got []corev1.NodeAddress
			if n != nil {
				got = n.Status.Addresses
			}
			t.Fatalf("%s: %v; addresses %v, want %v among them", name, err, got, want)
		}
	})

	asTrunked := asNode(t, cp, name)
	t.Run("the kubelet is certified for its node IP, the subport's address", func(t *testing.T) {
		csr, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, name, 2*time.Minute, func(c *certificatesv1.CertificateSigningRequest) bool {
			return len(c.Status.Certificate) > 0
		})
		if err != nil {
			t.Fatal(err)
		}
		if c := framework.Condition(csr, certificatesv1.CertificateApproved); c == nil || c.Reason != approver.ReasonVerified || !strings.Contains(c.Message, subportIP) {
			t.Fatalf("the kubelet's own request: %s; want approved for %s", framework.DescribeCSR(csr), subportIP)
		}
		c := decided(ctx, t, cp, requestServing(ctx, t, asTrunked, name, fixed, subportIP))
		if a := framework.Condition(c, certificatesv1.CertificateApproved); a == nil || a.Reason != approver.ReasonVerified {
			t.Fatalf("fixed IP %s with subport IP %s: %s; want approved", fixed, subportIP, framework.DescribeCSR(c))
		}
	})
	t.Run("an address on no port of the server is still denied", func(t *testing.T) {
		stray := vlanNet + ".250"
		c := decided(ctx, t, cp, requestServing(ctx, t, asTrunked, name, fixed, stray))
		d := framework.Condition(c, certificatesv1.CertificateDenied)
		if d == nil || d.Reason != approver.ReasonIPNotOfInstance || !strings.Contains(d.Message, stray) {
			t.Fatalf("request for %s: %s; want denied %s naming it", stray, framework.DescribeCSR(c), approver.ReasonIPNotOfInstance)
		}
	})
}
