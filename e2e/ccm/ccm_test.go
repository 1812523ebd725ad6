//go:build e2e

// Package ccm tests stackward-ccm on the real control plane: hollow kubelets
// join with --cloud-provider=external and the CCM, running with the chart's
// ServiceAccount and RBAC, initializes and tracks their Nodes against the
// simulated cloud.
package ccm

import (
	"context"
	"slices"
	"strings"
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

const (
	uninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"
	shutdownTaint      = "node.cloudprovider.kubernetes.io/shutdown"
)

type labNode struct {
	server cloudsim.Server
	node   *framework.Node
}

func TestCCMInitializesAndTracksNodes(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	specs := []struct {
		name, flavor, az string
		floating         bool
		providerID       bool
	}{
		{name: "worker-a", flavor: "m1.small", az: "az-1"},
		{name: "worker-b", flavor: "m1.medium", az: "az-2", floating: true},
		{name: "worker-c", flavor: "m1.large", az: "az-1", providerID: true},
	}
	nodes := map[string]*labNode{}
	for i, s := range specs {
		srv := cloud.CreateServer(t, s.name, i+1, s.flavor, s.az)
		if s.floating {
			if _, err := cloud.Sim.AttachFloatingIP(srv.ID, framework.FloatingNetwork); err != nil {
				t.Fatal(err)
			}
			srv, _ = cloud.Sim.GetServer(srv.ID)
		}
		opts := framework.NodeOptions{Name: s.name, IP: framework.NodeIP(i + 1)}
		if s.providerID {
			opts.ProviderID = "openstack:///" + srv.ID
		}
		nodes[s.name] = &labNode{server: srv, node: cp.StartNode(t, opts)}
	}
	cp.StartCCM(ctx, t, cloud.ReaderCloudConf(t), "--concurrent-node-syncs=2") // node controllers only read: reader

	t.Run("joined nodes are initialized exactly as the cloud describes them", func(t *testing.T) {
		for _, s := range specs {
			ln := nodes[s.name]
			// cloud-node removes the taint, then patches the addresses.
			want := expectedAddresses(ln.server)
			n, err := cp.WaitForNode(ctx, s.name, 90*time.Second, func(n *corev1.Node) bool {
				return n.Spec.ProviderID != "" && !framework.HasTaint(n, uninitializedTaint) && slices.Equal(addressStrings(n.Status.Addresses), want)
			})
			if err != nil {
				t.Fatalf("%v; addresses %v, want %v (from the simulator)", err, n.Status.Addresses, want)
			}
			if want := "openstack:///" + ln.server.ID; n.Spec.ProviderID != want {
				t.Errorf("%s: providerID %q, want %q", s.name, n.Spec.ProviderID, want)
			}
			wantLabels := map[string]string{
				corev1.LabelInstanceTypeStable: s.flavor,
				corev1.LabelTopologyZone:       s.az,
				corev1.LabelTopologyRegion:     framework.LabRegion,
			}
			for k, v := range wantLabels {
				if n.Labels[k] != v {
					t.Errorf("%s: label %s=%q, want %q", s.name, k, n.Labels[k], v)
				}
			}
		}
	})

	t.Run("a node whose name matches no server stays uninitialized with an Event saying why, and is never deleted", func(t *testing.T) {
		stray := cp.StartNode(t, framework.NodeOptions{Name: "stray", IP: framework.NodeIP(9)})
		var event *corev1.Event
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			events, err := cp.Admin.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=stray"})
			if err != nil {
				return false, nil
			}
			for i := range events.Items {
				if events.Items[i].Reason == "InstanceNotFound" {
					event = &events.Items[i]
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("no InstanceNotFound event on node stray: %v", err)
		}
		if !strings.Contains(event.Message, `"stray"`) {
			t.Errorf("event message %q does not name the node", event.Message)
		}
		n, err := cp.Admin.CoreV1().Nodes().Get(ctx, "stray", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !framework.HasTaint(n, uninitializedTaint) || n.Spec.ProviderID != "" {
			t.Errorf("stray node was initialized: providerID %q taints %v", n.Spec.ProviderID, n.Spec.Taints)
		}
		// NotReady, the lifecycle controller asks whether its instance
		// exists; a Node never matched to a server is not proof of a
		// deleted VM, so it must stay.
		stray.Stop()
		if _, err := cp.WaitForNode(ctx, "stray", time.Minute, func(n *corev1.Node) bool { return !framework.IsReady(n) }); err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, time.Second, 8*time.Second, true, func(ctx context.Context) (bool, error) {
			if _, err := cp.Admin.CoreV1().Nodes().Get(ctx, "stray", metav1.GetOptions{}); apierrors.IsNotFound(err) {
				t.Fatalf("the unmatched node stray was deleted")
			}
			return false, nil
		})
		if !wait.Interrupted(err) {
			t.Fatal(err)
		}
	})

	t.Run("a server shut off gets the shutdown taint, and loses it when started again", func(t *testing.T) {
		ln := nodes["worker-a"]
		ln.node.Stop()
		if err := cloud.Sim.SetServerStatus(ln.server.ID, "SHUTOFF"); err != nil {
			t.Fatal(err)
		}
		if _, err := cp.WaitForNode(ctx, "worker-a", 90*time.Second, func(n *corev1.Node) bool {
			return framework.HasTaint(n, shutdownTaint)
		}); err != nil {
			t.Fatal(err)
		}
		if err := cloud.Sim.SetServerStatus(ln.server.ID, "ACTIVE"); err != nil {
			t.Fatal(err)
		}
		ln.node.Start(t)
		if _, err := cp.WaitForNode(ctx, "worker-a", 90*time.Second, func(n *corev1.Node) bool {
			return framework.IsReady(n) && !framework.HasTaint(n, shutdownTaint)
		}); err != nil {
			t.Fatal(err)
		}
	})

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
