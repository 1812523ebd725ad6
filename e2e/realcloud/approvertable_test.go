//go:build e2e

package realcloud

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/approver"
)

// TestApproverMaliciousRequestsThatDependOnTheCloud is the part of the
// approver's malicious-request table (pkg/approver TestMaliciousRequests)
// whose answer comes from the cloud, asked of each cloud through a real
// apiserver: every request is denied with the reason the table names, and
// none is approved.
func TestApproverMaliciousRequestsThatDependOnTheCloud(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	for _, b := range framework.Backends(t) {
		t.Run(b.Cloud.Name(), func(t *testing.T) { maliciousTable(t, cp, b) })
	}
}

func maliciousTable(t *testing.T, cp *framework.ControlPlane, b framework.Backend) {
	cloud := b.Cloud
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	prefix := cloud.Name() + "-mal-"
	idxA, idxB, idxGone := b.FirstNode+85, b.FirstNode+86, b.FirstNode+87
	ipA, ipB := framework.NodeIP(idxA), framework.NodeIP(idxB)
	srvA := cloud.CreateServer(t, prefix+"a", idxA, "m1.small", "az-1")
	srvB := cloud.CreateServer(t, prefix+"b", idxB, "m1.small", "az-2")
	fipB := cloud.AttachFloatingIP(t, srvB.ID)
	gone := cloud.CreateServer(t, prefix+"gone", idxGone, "m1.small", "az-1")
	cloud.DeleteServer(t, gone.ID)

	// A pair a plain member of the project may add to its node's own port
	// (real Neutron allows it on the project's own network): it carries
	// traffic, but it is not an address the cloud gave the server.
	api := framework.NewCloudAPI(ctx, t, cloud.CloudConf(t, ""))
	const pairIP = "198.18.199.50"
	portA := api.NodePort(ctx, t, ipA)
	pairs := []ports.AddressPair{{IPAddress: pairIP}}
	if _, err := ports.Update(ctx, api.Neutron, portA.ID, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract(); err != nil {
		t.Fatalf("add an address pair to %s's port as a member: %v", srvA.Name, err)
	}

	cp.StartApprover(ctx, t, cloud.ReaderCloudConf(t), approver.Options{})
	var registered []string
	tests := []struct {
		name, node, providerID string
		ips                    []string
		reason                 string
		inMsg                  string
	}{
		{name: "another server's fixed IP is denied", node: srvA.Name, ips: []string{ipA, ipB}, reason: approver.ReasonIPNotOfInstance, inMsg: ipB},
		{name: "another server's floating IP is denied", node: srvA.Name, ips: []string{ipA, fipB}, reason: approver.ReasonIPNotOfInstance, inMsg: fipB},
		{name: "an allowed address pair on the node's own port is denied", node: srvA.Name, ips: []string{ipA, pairIP}, reason: approver.ReasonIPNotOfInstance, inMsg: pairIP},
		{name: "the router's address on the node network is denied", node: srvA.Name, ips: []string{ipA, "198.18.0.1"}, reason: approver.ReasonIPNotOfInstance, inMsg: "198.18.0.1"},
		{name: "a free address of the node subnet is denied", node: srvA.Name, ips: []string{"198.18.199.99"}, reason: approver.ReasonIPNotOfInstance, inMsg: "198.18.199.99"},
		{name: "a node named as no server is denied", node: prefix + "nosuch", ips: []string{ipA}, reason: approver.ReasonInstanceNotFound, inMsg: prefix + "nosuch"},
		{name: "a node whose providerID names another server is denied", node: prefix + "liar", providerID: "openstack:///" + srvB.ID, ips: []string{ipB}, reason: approver.ReasonInstanceNameMismatch, inMsg: srvB.ID},
		{name: "a node of a deleted server is denied", node: gone.Name, providerID: "openstack:///" + gone.ID, ips: []string{framework.NodeIP(idxGone)}, reason: approver.ReasonInstanceNotFound, inMsg: gone.ID},
	}
	for _, tt := range tests {
		if !slices.Contains(registered, tt.node) {
			registerNode(ctx, t, cp, tt.node, tt.providerID)
			registered = append(registered, tt.node)
		}
	}
	var names []string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := decided(ctx, t, cp, requestServing(ctx, t, asNode(t, cp, tt.node), tt.node, tt.ips...))
			names = append(names, c.Name)
			d := framework.Condition(c, certificatesv1.CertificateDenied)
			if d == nil || d.Reason != tt.reason || !strings.Contains(d.Message, tt.inMsg) {
				t.Errorf("%s: want denied %s naming %s", framework.DescribeCSR(c), tt.reason, tt.inMsg)
			}
		})
	}

	t.Run("none of the requests was approved or got a certificate", func(t *testing.T) {
		approved := 0
		for _, name := range names {
			c, err := cp.Admin.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if framework.Condition(c, certificatesv1.CertificateApproved) != nil || len(c.Status.Certificate) > 0 {
				approved++
				t.Errorf("approved: %s", framework.DescribeCSR(c))
			}
		}
		if len(names) != len(tests) {
			t.Errorf("%d of %d requests were decided", len(names), len(tests))
		}
		t.Logf("%s: %d malicious requests, %d approvals", cloud.Name(), len(names), approved)
	})
}

// registerNode creates the Node as its kubelet would have (no kubelet
// runs: the requests are made in its name), deleted with its CSRs at the end.
func registerNode(ctx context.Context, t *testing.T, cp *framework.ControlPlane, name, providerID string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	if _, err := cp.Admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cp.DeleteNodeAtEnd(t, name)
	deleteCSRsAtEnd(t, cp, name)
}
