//go:build e2e

package loadbalancer

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

func TestRoutesFollowNodePodCIDRs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l := newLab(ctx, t, framework.CloudOptions{}, "[Route]\nrouter-id = %s\n",
		[]string{"--allocate-node-cidrs", "--configure-cloud-routes", "--cluster-cidr=198.19.128.0/17", "--route-reconciliation-period=2s"},
		"rt", 60, 3)
	cp, api := l.cp, l.api
	routerID := api.routerID(ctx, t)

	podCIDRs := map[string]string{}
	for name := range l.nodes {
		n, err := cp.WaitForNode(ctx, name, 60*time.Second, func(n *corev1.Node) bool { return n.Spec.PodCIDR != "" })
		if err != nil {
			t.Fatalf("node %s got no pod CIDR: %v", name, err)
		}
		podCIDRs[name] = n.Spec.PodCIDR
	}
	pairs := func(ip string) []string {
		pages, err := ports.List(api.neutron, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: ip}}}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ps, _ := ports.ExtractPorts(pages)
		var out []string
		for _, p := range ps {
			for _, pair := range p.AllowedAddressPairs {
				out = append(out, pair.IPAddress)
			}
		}
		return out
	}
	hasRoute := func(cidr, hop string) bool {
		for _, r := range api.routes(ctx, t, routerID) {
			if r.DestinationCIDR == cidr && r.NextHop == hop {
				return true
			}
		}
		return false
	}

	t.Run("each node's pod CIDR is routed to its InternalIP and allowed on its port", func(t *testing.T) {
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			for name, cidr := range podCIDRs {
				if !hasRoute(cidr, l.ips[name]) {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("routes %v, want %v via %v", api.routes(ctx, t, routerID), podCIDRs, l.ips)
		}
		for name, cidr := range podCIDRs {
			if got := pairs(l.ips[name]); !slices.Contains(got, cidr) {
				t.Errorf("port of %s allows %v, want %s", name, got, cidr)
			}
		}
		for name := range podCIDRs {
			n, _ := cp.Admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeNetworkUnavailable && c.Status != corev1.ConditionFalse {
					t.Errorf("%s NetworkUnavailable=%s", name, c.Status)
				}
			}
		}
	})

	t.Run("a node's route and address pair go with the node", func(t *testing.T) {
		gone, ip := "rt-2", l.ips["rt-2"]
		l.removeNode(ctx, t, gone)
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			return !hasRoute(podCIDRs[gone], ip) && !slices.Contains(pairs(ip), podCIDRs[gone]), nil
		})
		if err != nil {
			t.Fatalf("route %s via %s still there: %v, pairs %v", podCIDRs[gone], ip, api.routes(ctx, t, routerID), pairs(ip))
		}
		for _, name := range []string{"rt-1", "rt-3"} {
			if !hasRoute(podCIDRs[name], l.ips[name]) {
				t.Errorf("route of %s went too", name)
			}
		}
		if n := len(api.routes(ctx, t, routerID)); n != 2 {
			t.Errorf("%d routes, want 2", n)
		}
	})
}
