//go:build e2e

package realcloud

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
)

const shutdownTaint = "node.cloudprovider.kubernetes.io/shutdown"

// TestCCMInitializesAndTracksNodes is the node scenario, written once and
// run on both clouds: hollow kubelets join, the CCM initializes their
// Nodes from what the cloud says (addresses, providerID, instance type,
// zone, region), a Node of no server stays uninitialized and is never
// deleted, a server shut off taints its Node and a deleted server's Node
// is deleted. Its fault (a Nova outage) is the simulator's, in e2e/ccm.
func TestCCMInitializesAndTracksNodes(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	for _, b := range framework.Backends(t) {
		t.Run(b.Cloud.Name(), func(t *testing.T) { ccmNodeLifecycle(t, cp, b) })
	}
}

func ccmNodeLifecycle(t *testing.T, cp *framework.ControlPlane, b framework.Backend) {
	cloud := b.Cloud
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	prefix := cloud.Name() + "-"

	specs := []struct {
		name, flavor, az string
		floating         bool
		providerID       bool
	}{
		{name: prefix + "worker-a", flavor: "m1.small", az: "az-1"},
		{name: prefix + "worker-b", flavor: "m1.medium", az: "az-2", floating: true},
		{name: prefix + "worker-c", flavor: "m1.large", az: "az-1", providerID: true},
	}
	type labNode struct {
		server framework.TestServer
		node   *framework.Node
	}
	nodes := map[string]*labNode{}
	for i, s := range specs {
		idx := b.FirstNode + i
		srv := cloud.CreateServer(t, s.name, idx, s.flavor, s.az)
		if s.floating {
			cloud.AttachFloatingIP(t, srv.ID)
			srv, _ = cloud.GetServer(t, srv.ID)
		}
		opts := framework.NodeOptions{Name: s.name, IP: framework.NodeIP(idx)}
		if s.providerID {
			opts.ProviderID = "openstack:///" + srv.ID
		}
		cp.DeleteNodeAtEnd(t, s.name)
		nodes[s.name] = &labNode{server: srv, node: cp.StartNode(t, opts)}
	}
	cp.StartCCM(ctx, t, cloud.ReaderCloudConf(t), "--concurrent-node-syncs=2") // node controllers only read: reader

	t.Run("joined nodes are initialized exactly as the cloud describes them", func(t *testing.T) {
		for _, s := range specs {
			ln := nodes[s.name]
			want := expectedAddresses(ln.server)
			n, err := cp.WaitForNode(ctx, s.name, 3*time.Minute, func(n *corev1.Node) bool {
				return n.Spec.ProviderID != "" && !framework.HasTaint(n, framework.UninitializedTaint) && slices.Equal(addressStrings(n.Status.Addresses), want)
			})
			if err != nil {
				t.Fatalf("%s: %v; addresses %v, want %v (from %s)", s.name, err, n.Status.Addresses, want, cloud.Name())
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
		name := prefix + "stray"
		cp.DeleteNodeAtEnd(t, name)
		stray := cp.StartNode(t, framework.NodeOptions{Name: name, IP: framework.NodeIP(b.FirstNode + 9)})
		var event *corev1.Event
		err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			events, err := cp.Admin.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + name})
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
			t.Fatalf("no InstanceNotFound event on node %s: %v", name, err)
		}
		if !strings.Contains(event.Message, `"`+name+`"`) {
			t.Errorf("event message %q does not name the node", event.Message)
		}
		n, err := cp.Admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !framework.HasTaint(n, framework.UninitializedTaint) || n.Spec.ProviderID != "" {
			t.Errorf("stray node was initialized: providerID %q taints %v", n.Spec.ProviderID, n.Spec.Taints)
		}
		// NotReady, the lifecycle controller asks whether its instance
		// exists; a Node never matched to a server is not proof of a
		// deleted VM, so it must stay.
		stray.Stop()
		if _, err := cp.WaitForNode(ctx, name, 2*time.Minute, func(n *corev1.Node) bool { return !framework.IsReady(n) }); err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, time.Second, 8*time.Second, true, func(ctx context.Context) (bool, error) {
			if _, err := cp.Admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				t.Fatalf("the unmatched node %s was deleted", name)
			}
			return false, nil
		})
		if !wait.Interrupted(err) {
			t.Fatal(err)
		}
	})

	t.Run("a server shut off gets the shutdown taint, and loses it when started again", func(t *testing.T) {
		ln := nodes[prefix+"worker-a"]
		ln.node.Stop()
		cloud.StopServer(t, ln.server.ID)
		if _, err := cp.WaitForNode(ctx, ln.server.Name, 3*time.Minute, func(n *corev1.Node) bool {
			return framework.HasTaint(n, shutdownTaint)
		}); err != nil {
			t.Fatal(err)
		}
		cloud.StartServer(t, ln.server.ID)
		ln.node.Start(t)
		if _, err := cp.WaitForNode(ctx, ln.server.Name, 3*time.Minute, func(n *corev1.Node) bool {
			return framework.IsReady(n) && !framework.HasTaint(n, shutdownTaint)
		}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a deleted server's Node is deleted, and only that one", func(t *testing.T) {
		victim := nodes[prefix+"worker-c"]
		victim.node.Stop()
		cloud.DeleteServer(t, victim.server.ID)
		err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := cp.Admin.CoreV1().Nodes().Get(ctx, victim.server.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatalf("node %s of the deleted server was not deleted: %v", victim.server.Name, err)
		}
		for _, name := range []string{prefix + "worker-a", prefix + "worker-b"} {
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

// expectedAddresses is what the cloud says the server has: fixed IPs are
// internal, floating IPs external, and the name is the Hostname.
func expectedAddresses(srv framework.TestServer) []string {
	out := []string{string(corev1.NodeHostName) + "=" + srv.Name}
	for _, ip := range srv.FixedIPs {
		out = append(out, string(corev1.NodeInternalIP)+"="+ip)
	}
	for _, ip := range srv.FloatingIPs {
		out = append(out, string(corev1.NodeExternalIP)+"="+ip)
	}
	slices.Sort(out)
	return out
}
