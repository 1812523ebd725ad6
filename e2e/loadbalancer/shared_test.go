//go:build e2e

package loadbalancer

import (
	"context"
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

// Another cluster (same --cluster-name, same pod CIDR) and the operator
// share the router and the node network with this one. Everything of
// theirs must stay exactly as it was, byte for byte, through this
// cluster's route and load balancer work, a node going away and a CCM
// restart.
func TestASecondClusterOnTheSameRouterAndNetworkIsNeverTouched(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const clusterCIDR = "198.19.128.0/17"
	l := newLab(ctx, t, framework.SimCloudOptions{}, "[Route]\nrouter-id = %s\n",
		[]string{"--allocate-node-cidrs", "--configure-cloud-routes", "--cluster-cidr=" + clusterCIDR, "--route-reconciliation-period=2s"},
		"sh", 110, 2)
	cp, api := l.cp, l.api
	routerID := api.routerID(ctx, t)
	ours, ok := l.cloud.Sim.ServerByName("sh-1")
	if !ok {
		t.Fatal("no server sh-1")
	}
	other := framework.NewOtherCluster(ctx, t, l.cloud.TestCloud(), api.CloudAPI, framework.OtherClusterOptions{
		RouterID: routerID, TheirNode: 150, OurServerID: ours.ID, Service: loadbalancer.ServiceRef{Namespace: "shared", Name: "web"}})
	before := other.Snapshot(ctx, t)

	podCIDRs := map[string]string{}
	for name := range l.nodes {
		n, err := cp.WaitForNode(ctx, name, 60*time.Second, func(n *corev1.Node) bool { return n.Spec.PodCIDR != "" })
		if err != nil {
			t.Fatal(err)
		}
		podCIDRs[name] = n.Spec.PodCIDR
	}
	hasRoute := func(cidr, hop string) bool {
		return slices.Contains(api.routes(ctx, t, routerID), routers.Route{DestinationCIDR: cidr, NextHop: hop})
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: %v; routes %v", what, err, api.routes(ctx, t, routerID))
		}
	}
	unchanged := func(when string) {
		t.Helper()
		if after := other.Snapshot(ctx, t); after != before {
			t.Errorf("%s, the other cluster's and the operator's resources changed:\nbefore %s\nafter  %s", when, before, after)
		}
	}

	waitFor("our routes", func() bool {
		for name, cidr := range podCIDRs {
			if !hasRoute(cidr, l.ips[name]) {
				return false
			}
		}
		return true
	})
	createNamespace(ctx, t, cp, "shared")
	t.Cleanup(func() { dropServices(t, cp, "shared") })
	if _, err := cp.Admin.CoreV1().Services("shared").Create(ctx, lbService("shared", "web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitIngress(ctx, t, cp, "shared", "web", 2*time.Minute)
	unchanged("with our routes and load balancer in place")

	gone, ip := "sh-2", l.ips["sh-2"]
	l.removeNode(ctx, t, gone)
	waitFor("the removed node's route goes", func() bool { return !hasRoute(podCIDRs[gone], ip) })
	unchanged("after our node's route was removed")

	// A restart (as a leader change): ownership is read back, not guessed.
	l.stop()
	startCCM(ctx, t, cp, l.conf, l.args...)
	time.Sleep(6 * time.Second) // three route reconciliations: nothing may change
	if !hasRoute(podCIDRs["sh-1"], l.ips["sh-1"]) {
		t.Error("our remaining route went after the restart")
	}
	if err := cp.Admin.CoreV1().Services("shared").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitTree(ctx, t, api, 2*time.Minute, "only the other cluster's load balancer left", func(st *octaviaState) bool { return st.N == 1 })
	unchanged("after a CCM restart and our Service's deletion")
}

func labSubnet(ctx context.Context, t *testing.T, a *cloudAPI) string {
	t.Helper()
	return a.SubnetID(ctx, t, "lab-v4")
}

func publicNetwork(ctx context.Context, t *testing.T, a *cloudAPI) string {
	t.Helper()
	return a.NetworkID(ctx, t, framework.FloatingNetwork)
}
