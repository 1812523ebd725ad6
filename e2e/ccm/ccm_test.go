//go:build e2e

// Package ccm tests stackward-ccm on the real control plane: hollow kubelets
// join with --cloud-provider=external and the CCM, running with the chart's
// ServiceAccount and RBAC, initializes and tracks their Nodes against the
// simulated cloud.
package ccm

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/internal/cloudsim"
)

func TestMain(m *testing.M) { framework.Main(m) }

const uninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"

// TestANovaOutageDeletesAndChangesNothing is the node scenario's fault,
// which only the simulator can inject at will: while Nova answers 503 for
// 30 s a node's server is deleted, and the CCM neither deletes nor changes
// any Node until Nova answers again; then it deletes that server's Node,
// and only that one. The scenario itself (initialization as the cloud
// describes the node, a node of no server, a server shut off, a server
// deleted) runs on both clouds in e2e/realcloud's
// TestCCMInitializesAndTracksNodes.
func TestANovaOutageDeletesAndChangesNothing(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	type labNode struct {
		server cloudsim.Server
		node   *framework.Node
	}
	nodes := map[string]*labNode{}
	names := []string{"worker-a", "worker-b", "worker-c"}
	for i, name := range names {
		srv := cloud.CreateServer(t, name, i+1, "m1.small", "az-1")
		if i == 1 {
			if _, err := cloud.Sim.AttachFloatingIP(srv.ID, framework.FloatingNetwork); err != nil {
				t.Fatal(err)
			}
			srv, _ = cloud.Sim.GetServer(srv.ID)
		}
		nodes[name] = &labNode{server: srv, node: cp.StartNode(t, framework.NodeOptions{Name: name, IP: framework.NodeIP(i + 1)})}
	}
	cp.StartCCM(ctx, t, cloud.ReaderCloudConf(t), "--concurrent-node-syncs=2") // node controllers only read: reader
	for _, name := range names {
		want := expectedAddresses(nodes[name].server)
		if n, err := cp.WaitForNode(ctx, name, 90*time.Second, func(n *corev1.Node) bool {
			return n.Spec.ProviderID != "" && !framework.HasTaint(n, uninitializedTaint) && slices.Equal(addressStrings(n.Status.Addresses), want)
		}); err != nil {
			t.Fatalf("%v; addresses %v, want %v (from the simulator)", err, n.Status.Addresses, want)
		}
	}

	t.Run("during a 30s Nova outage nothing is deleted or changed, and all converges after", func(t *testing.T) {
		victim := nodes["worker-c"]
		before, err := cp.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := cloud.Sim.SetFault(cloudsim.FaultRule{Service: "compute", Status: 503}); err != nil {
			t.Fatal(err)
		}
		// The server goes away while the cloud cannot answer: the CCM
		// must not take the outage for "not found".
		victim.node.Stop()
		if err := cloud.Sim.DeleteServer(victim.server.ID); err != nil {
			t.Fatal(err)
		}
		outageEnd := time.Now().Add(30 * time.Second)
		for time.Now().Before(outageEnd) {
			now, err := cp.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range before.Items {
				n := framework.NodeByName(now.Items, b.Name)
				if n == nil {
					t.Fatalf("node %s was deleted during the cloud outage", b.Name)
				}
				if !slices.Equal(addressStrings(n.Status.Addresses), addressStrings(b.Status.Addresses)) || n.Spec.ProviderID != b.Spec.ProviderID {
					t.Fatalf("node %s changed during the outage: addresses %v -> %v", b.Name, b.Status.Addresses, n.Status.Addresses)
				}
			}
			time.Sleep(time.Second)
		}
		if calls := cloud.Sim.Calls(); calls["compute.servers.get"]+calls["compute.servers.detail"] == 0 {
			t.Errorf("the CCM made no Nova call during the outage; the test proved nothing: %v", calls)
		}
		cloud.Sim.ClearFaults()
		err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := cp.Admin.CoreV1().Nodes().Get(ctx, "worker-c", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatalf("node worker-c of the deleted server was not deleted after the outage: %v", err)
		}
		for _, name := range []string{"worker-a", "worker-b"} {
			if _, err := cp.Admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Errorf("node %s: %v", name, err)
			}
		}
	})
}

func addressStrings(addrs []corev1.NodeAddress) []string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, string(a.Type)+"="+a.Address)
	}
	slices.Sort(out)
	return out
}

// expectedAddresses is what the simulator says the server has: fixed IPs
// are internal, floating IPs external, and the name is the Hostname.
func expectedAddresses(srv cloudsim.Server) []string {
	out := []string{string(corev1.NodeHostName) + "=" + srv.Name}
	for _, a := range srv.Addresses {
		typ := corev1.NodeInternalIP
		if a.Type == "floating" {
			typ = corev1.NodeExternalIP
		}
		out = append(out, string(typ)+"="+a.IP)
	}
	slices.Sort(out)
	return out
}
