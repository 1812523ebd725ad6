//go:build e2e

package realcloud

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// TestASecondClustersResourcesAreNeverTouched is e2e/loadbalancer's
// second-cluster test on both clouds: another cluster with the same
// --cluster-name and pod CIDR, and the operator, share the router and the
// node network with this one. Their node port's address pairs, their and
// the operator's routes, the operator's pair on our node's port, and their
// load balancer with our very name and its floating IP stay byte for byte
// through our routes, our Service, a node going, a CCM restart and our
// Service's deletion.
func TestASecondClustersResourcesAreNeverTouched(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	for _, b := range framework.Backends(t) {
		b.FirstNode += 90
		t.Run(b.Cloud.Name(), func(t *testing.T) { secondCluster(t, cp, b) })
	}
}

func secondCluster(t *testing.T, cp *framework.ControlPlane, b framework.Backend) {
	cloud := b.Cloud
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	api := framework.NewCloudAPI(ctx, t, cloud.CloudConf(t, ""))
	routerID := api.RouterID(ctx, t, "lab-router")
	ns := "second-" + cloud.Name()
	ips := map[string]string{}
	kubelets := map[string]*framework.Node{}
	var firstServer string
	for i := range 2 {
		name := fmt.Sprintf("%s-sh-%d", cloud.Name(), i)
		kubelets[name], ips[name] = cp.JoinCloudNode(t, cloud, name, b.FirstNode+i), framework.NodeIP(b.FirstNode+i)
		if i == 0 {
			firstServer = api.NodePort(ctx, t, ips[name]).DeviceID
		}
	}
	other := framework.NewOtherCluster(ctx, t, cloud, api, framework.OtherClusterOptions{
		RouterID: routerID, TheirNode: b.FirstNode + 5, OurServerID: firstServer,
		Service: loadbalancer.ServiceRef{Namespace: ns, Name: "web"},
	})
	before := other.Snapshot(ctx, t)
	unchanged := func(t *testing.T, when string) {
		t.Helper()
		if after := other.Snapshot(ctx, t); after != before {
			t.Errorf("%s, the other cluster's and the operator's resources changed:\nbefore %s\nafter  %s", when, before, after)
		}
	}

	conf := cloud.CloudConf(t, "\n[Route]\nrouter-id = "+routerID+"\n")
	args := []string{"--allocate-node-cidrs", "--configure-cloud-routes", "--cluster-cidr=" + clusterCIDR.String(), "--route-reconciliation-period=2s"}
	stop, err := cp.RunCCM(ctx, conf, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop() })
	t.Cleanup(func() { cp.DeleteServices(t, ns) })
	podCIDRs := map[string]string{}
	for name := range ips {
		n, err := cp.WaitForNode(ctx, name, 3*time.Minute, func(n *corev1.Node) bool { return n.Spec.PodCIDR != "" })
		if err != nil {
			t.Fatal(err)
		}
		podCIDRs[name] = n.Spec.PodCIDR
	}
	hasRoute := func(name string) bool {
		return slices.Contains(api.Routes(ctx, t, routerID), routers.Route{DestinationCIDR: podCIDRs[name], NextHop: ips[name]})
	}
	waitFor := func(t *testing.T, what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: %v; routes %v", what, err, api.Routes(ctx, t, routerID))
		}
	}

	t.Run("our routes and load balancer in place change nothing of theirs", func(t *testing.T) {
		waitFor(t, "our routes", func() bool {
			for name := range ips {
				if !hasRoute(name) {
					return false
				}
			}
			return true
		})
		cp.CreateNamespace(ctx, t, ns)
		if _, err := cp.Admin.CoreV1().Services(ns).Create(ctx, framework.LBService(ns, "web"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cp.WaitIngress(ctx, t, ns, "web", 5*time.Minute)
		unchanged(t, "with our routes and load balancer in place")
	})

	t.Run("a node of ours going takes only its own route", func(t *testing.T) {
		gone := fmt.Sprintf("%s-sh-%d", cloud.Name(), 1)
		kubelets[gone].Stop()
		if err := cp.Admin.CoreV1().Nodes().Delete(ctx, gone, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the removed node's route goes", func() bool { return !hasRoute(gone) })
		delete(ips, gone)
		unchanged(t, "after our node's route was removed")
	})

	t.Run("after a CCM restart and our Service's deletion only their load balancer is left, unchanged", func(t *testing.T) {
		// A restart (as a leader change): ownership is read back, not guessed.
		stop()
		if stop, err = cp.RunCCM(ctx, conf, args...); err != nil {
			t.Fatal(err)
		}
		time.Sleep(6 * time.Second) // three route reconciliations: nothing may change
		for name := range ips {
			if !hasRoute(name) {
				t.Errorf("our route of %s went after the restart", name)
			}
		}
		cp.DeleteServices(t, ns)
		// Both load balancers have the same name: only theirs may be left.
		name := loadbalancer.LoadBalancerName("lab", loadbalancer.ServiceRef{Namespace: ns, Name: "web"})
		var ids []string
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			ids = nil
			for _, lb := range api.LoadBalancersNamed(ctx, t, name) {
				ids = append(ids, lb.ID)
			}
			return slices.Equal(ids, []string{other.LoadBalancerID()}), nil
		}); err != nil {
			t.Fatalf("load balancers named %s: %v, want only theirs %s", name, ids, other.LoadBalancerID())
		}
		unchanged(t, "after a CCM restart and our Service's deletion")
	})

	// The real cloud outlives the test: our last node goes while the CCM
	// runs, so that its route goes too.
	last := fmt.Sprintf("%s-sh-%d", cloud.Name(), 0)
	kubelets[last].Stop()
	if err := cp.Admin.CoreV1().Nodes().Delete(ctx, last, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "our last route goes", func() bool { return !hasRoute(last) })
}
