package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/internal/cloudsim"
)

// ControlPlaneNodeName is the control-plane host's node name: the
// nodeRegistration.name of the lab's kubeadm configuration.
const ControlPlaneNodeName = "control-plane"

// ControlPlaneVIP is the lab's control-plane endpoint as an operator
// lists it in approver.controlPlaneEndpoints: an address in front of the
// apiservers that no node owns. An HA lab (ControlPlaneOptions.HA) serves
// its apiservers on it; a single-host lab does not, and has it so the
// approver can be configured as in production, where the control-plane
// hosts' own addresses are nodes' addresses.
const ControlPlaneVIP = "198.18.255.100"

// ControlPlaneTaint is the taint kubeadm puts on control-plane nodes
// (bootstrap/init-configuration.yaml's nodeRegistration.taints).
const ControlPlaneTaint = "node-role.kubernetes.io/control-plane"

// StartControlPlaneNode makes the control-plane host a node, as `kubeadm
// init` does on a real one: a server for the host in the cloud whose fixed
// IP is the apiserver's advertise address, a hollow kubelet on that
// address with the provider ID stackward-node would give it, then
// kubeadm's own mark-control-plane phase over the lab's configuration,
// which adds the control-plane label (a kubelet may not set node-role
// labels on itself) and nodeRegistration.taints.
func (cp *ControlPlane) StartControlPlaneNode(ctx context.Context, t testing.TB, cloud *SimCloud) (*Node, cloudsim.Server) {
	t.Helper()
	return cp.startControlPlaneHost(ctx, t, cloud, ControlPlaneNodeName, ControlPlaneIP, true)
}

// StartExtraControlPlaneNode is a further control-plane host's kubelet
// (the i-th, from 1): node control-plane-<i+1> on 198.18.255.<i+1>, marked
// by kubeadm's mark-control-plane phase with kubeadm's label and
// taint from the lab's configuration. In an HA lab it is the kubelet of
// the joined host on that address (HostName(i), HostIP(i)); a single-host
// lab's extra hosts give the cluster only the node shape of a three-host
// control plane.
func (cp *ControlPlane) StartExtraControlPlaneNode(ctx context.Context, t testing.TB, cloud *SimCloud, i int) (*Node, cloudsim.Server) {
	t.Helper()
	return cp.startControlPlaneHost(ctx, t, cloud, fmt.Sprintf("%s-%d", ControlPlaneNodeName, i+1), fmt.Sprintf("198.18.255.%d", i+1), false)
}

func (cp *ControlPlane) startControlPlaneHost(ctx context.Context, t testing.TB, cloud *SimCloud, name, ip string, first bool) (*Node, cloudsim.Server) {
	t.Helper()
	srv, err := cloud.Sim.CreateServer(cloudsim.ServerSpec{
		Name: name, Flavor: "m1.small", AZ: "az-1",
		NICs: []cloudsim.NICSpec{{Network: LabNetwork, FixedIP: ip}},
	})
	if err != nil {
		t.Fatalf("create the server of control-plane host %s: %v", name, err)
	}
	// Registered first, so it runs after the kubelet stopped: the next
	// test's cloud has other server IDs, and a Node keeps its providerID.
	// Its CSRs go too: a later test's approver would decide them against
	// another cloud.
	t.Cleanup(func() {
		ctx := context.Background()
		_ = cp.Admin.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		csrs, err := cp.Admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, c := range csrs.Items {
			if c.Spec.Username == "system:node:"+name {
				_ = cp.Admin.CertificatesV1().CertificateSigningRequests().Delete(ctx, c.Name, metav1.DeleteOptions{})
			}
		}
	})
	node := cp.StartNode(t, NodeOptions{Name: name, IP: ip, ProviderID: "openstack:///" + srv.ID})
	if _, err := cp.WaitForNode(ctx, name, time.Minute, func(*corev1.Node) bool { return true }); err != nil {
		t.Fatalf("the kubelet of control-plane host %s did not register: %v\n%s", name, err, node.Process.Tail(4000))
	}
	cfg := filepath.Join(cp.Dir, "kubeadm.yaml")
	if !first {
		// The lab's configuration under the host's node name (the address
		// stays the one apiserver's, which kubeadm talks to).
		data, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg = filepath.Join(cp.Dir, "kubeadm-"+name+".yaml")
		host := strings.Replace(string(data), "name: "+ControlPlaneNodeName+"\n", "name: "+name+"\n", 1)
		if err := os.WriteFile(cfg, []byte(host), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := run(filepath.Join(cp.toolsDir, "kubeadm"), "init", "phase", "mark-control-plane", "--config", cfg); err != nil {
		t.Fatalf("kubeadm init phase mark-control-plane: %v", err)
	}
	return node, srv
}
