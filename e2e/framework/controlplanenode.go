package framework

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/cloudsim"
)

// ControlPlaneNodeName is the control-plane host's node name: the
// nodeRegistration.name of the lab's kubeadm configuration.
const ControlPlaneNodeName = "control-plane"

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
func (cp *ControlPlane) StartControlPlaneNode(ctx context.Context, t testing.TB, cloud *Cloud) (*Node, cloudsim.Server) {
	t.Helper()
	srv, err := cloud.Sim.CreateServer(cloudsim.ServerSpec{
		Name: ControlPlaneNodeName, Flavor: "m1.small", AZ: "az-1",
		NICs: []cloudsim.NICSpec{{Network: LabNetwork, FixedIP: ControlPlaneIP}},
	})
	if err != nil {
		t.Fatalf("create the control-plane host's server: %v", err)
	}
	node := cp.StartNode(t, NodeOptions{
		Name:       ControlPlaneNodeName,
		IP:         ControlPlaneIP,
		ProviderID: "openstack:///" + srv.ID,
	})
	if _, err := cp.WaitForNode(ctx, ControlPlaneNodeName, time.Minute, func(*corev1.Node) bool { return true }); err != nil {
		t.Fatalf("the control-plane host's kubelet did not register: %v\n%s", err, node.Process.Tail(4000))
	}
	if err := cp.MarkControlPlane(); err != nil {
		t.Fatal(err)
	}
	return node, srv
}

// MarkControlPlane runs `kubeadm init phase mark-control-plane` over the
// lab's kubeadm configuration.
func (cp *ControlPlane) MarkControlPlane() error {
	_, err := run(filepath.Join(cp.toolsDir, "kubeadm"), "init", "phase", "mark-control-plane",
		"--config", filepath.Join(cp.Dir, "kubeadm.yaml"))
	if err != nil {
		return fmt.Errorf("kubeadm init phase mark-control-plane: %w", err)
	}
	return nil
}
