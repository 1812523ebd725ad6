//go:build e2e

package realcloud

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

// TestRoutesAndAddressPairsFollowNodes: with [Route] router-id the CCM
// routes each node's pod CIDR to its InternalIP on the router and allows the
// CIDR on the node's port (an allowed address pair), and takes both away
// when the node goes; on the real router and real Neutron ports too.
func TestRoutesAndAddressPairsFollowNodes(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	for _, b := range framework.Backends(t) {
		b.FirstNode += 60
		t.Run(b.Cloud.Name(), func(t *testing.T) { routesFollowNodes(t, cp, b) })
	}
}

// clusterCIDR is where the CCM allocates the nodes' pod CIDRs.
var clusterCIDR = netip.MustParsePrefix("198.19.128.0/17")

func routesFollowNodes(t *testing.T, cp *framework.ControlPlane, b framework.Backend) {
	cloud := b.Cloud
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	api := framework.NewCloudAPI(ctx, t, cloud.CloudConf(t, ""))
	routerID := api.RouterID(ctx, t, "lab-router")
	ips := map[string]string{}
	kubelets := map[string]*framework.Node{}
	for i := range 2 {
		name := fmt.Sprintf("%s-rt-%d", cloud.Name(), i)
		kubelets[name], ips[name] = cp.JoinCloudNode(t, cloud, name, b.FirstNode+i), framework.NodeIP(b.FirstNode+i)
	}
	cp.StartCCM(ctx, t, cloud.CloudConf(t, "\n[Route]\nrouter-id = "+routerID+"\n"),
		"--allocate-node-cidrs", "--configure-cloud-routes", "--cluster-cidr="+clusterCIDR.String(), "--route-reconciliation-period=2s")
	podCIDRs := map[string]string{}
	for name := range ips {
		n, err := cp.WaitForNode(ctx, name, 3*time.Minute, func(n *corev1.Node) bool {
			return n.Spec.PodCIDR != "" && !framework.HasTaint(n, framework.UninitializedTaint)
		})
		if err != nil {
			t.Fatalf("node %s got no pod CIDR: %v", name, err)
		}
		podCIDRs[name] = n.Spec.PodCIDR
	}
	// ours are the routes into the cluster CIDR (another test's cluster
	// may have routes of its own on the lab router).
	ours := func() []string {
		var out []string
		for _, r := range api.Routes(ctx, t, routerID) {
			if p, err := netip.ParsePrefix(r.DestinationCIDR); err == nil && clusterCIDR.Overlaps(p) {
				out = append(out, r.DestinationCIDR+" via "+r.NextHop)
			}
		}
		slices.Sort(out)
		return out
	}
	want := func() []string {
		var out []string
		for name, ip := range ips {
			out = append(out, podCIDRs[name]+" via "+ip)
		}
		slices.Sort(out)
		return out
	}
	waitRoutes := func(t *testing.T, what string) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			return slices.Equal(ours(), want()), nil
		}); err != nil {
			t.Fatalf("%s: routes %v, want %v", what, ours(), want())
		}
	}

	t.Run("each node's pod CIDR is routed to its InternalIP and allowed on its port", func(t *testing.T) {
		waitRoutes(t, "a route per node")
		for name, cidr := range podCIDRs {
			if got := api.AddressPairs(ctx, t, ips[name]); !slices.Equal(got, []string{cidr}) {
				t.Errorf("port of %s allows %v, want [%s]", name, got, cidr)
			}
			// The route controller marks the Nodes once all its creates
			// returned, which on the real cloud is after Neutron shows them.
			if _, err := cp.WaitForNode(ctx, name, time.Minute, func(n *corev1.Node) bool {
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeNetworkUnavailable {
						return c.Status == corev1.ConditionFalse
					}
				}
				return false
			}); err != nil {
				t.Errorf("%s never had NetworkUnavailable=False: %v", name, err)
			}
		}
	})

	// Every node goes, one after the other: the router and the ports end
	// as they were before the cluster had routes.
	for i := range 2 {
		gone := fmt.Sprintf("%s-rt-%d", cloud.Name(), i)
		t.Run(fmt.Sprintf("node %d's route and address pair go with it, the others stay", i), func(t *testing.T) {
			ip, cidr := ips[gone], podCIDRs[gone]
			kubelets[gone].Stop()
			if err := cp.Admin.CoreV1().Nodes().Delete(ctx, gone, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			delete(ips, gone)
			waitRoutes(t, "node "+gone+" deleted")
			if err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
				return !slices.Contains(api.AddressPairs(ctx, t, ip), cidr), nil
			}); err != nil {
				t.Fatalf("port of %s still allows %s: %v", gone, cidr, api.AddressPairs(ctx, t, ip))
			}
			for name, ip := range ips {
				if got := api.AddressPairs(ctx, t, ip); !slices.Equal(got, []string{podCIDRs[name]}) {
					t.Errorf("port of %s allows %v, want [%s]", name, got, podCIDRs[name])
				}
			}
		})
	}
	if got := ours(); len(got) != 0 {
		t.Errorf("routes into the cluster CIDR left on the router: %v", got)
	}
}
