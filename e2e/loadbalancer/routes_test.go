//go:build e2e

package loadbalancer

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

func TestRoutesFollowNodePodCIDRs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l := newLab(ctx, t, framework.SimCloudOptions{}, "[Route]\nrouter-id = %s\n",
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
	pairs := func(ip string) []string { return api.AddressPairs(ctx, t, ip) }
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

	t.Run("a node claiming another node's IP and a crafted pod CIDR changes no route or address pair", func(t *testing.T) {
		liar, victim := "rt-1", "rt-3"
		before := api.routes(ctx, t, routerID)
		pairsBefore := map[string][]string{liar: pairs(l.ips[liar]), victim: pairs(l.ips[victim])}
		// The liar adds the victim's IP to its own status (a kubelet may
		// write its Node's status) ...
		n, err := cp.Admin.CoreV1().Nodes().Get(ctx, liar, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: l.ips[victim]})
		if _, err := cp.Admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		// ... and registers a Node of its own with a crafted pod CIDR.
		rogue := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "rt-rogue"}, Spec: corev1.NodeSpec{PodCIDR: "0.0.0.0/0", PodCIDRs: []string{"0.0.0.0/0"}}}
		if _, err := cp.Admin.CoreV1().Nodes().Create(ctx, rogue, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cp.Admin.CoreV1().Nodes().Delete(context.Background(), "rt-rogue", metav1.DeleteOptions{}) }()
		// Several reconcile periods (2 s): the victim's route is never
		// taken down, nothing is added.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if now := api.routes(ctx, t, routerID); len(now) != len(before) || !hasRoute(podCIDRs[victim], l.ips[victim]) {
				t.Fatalf("routes changed to %v (were %v)", now, before)
			}
			time.Sleep(250 * time.Millisecond)
		}
		for name, was := range pairsBefore {
			if got := pairs(l.ips[name]); !slices.Equal(got, was) {
				t.Errorf("address pairs of %s changed from %v to %v", name, was, got)
			}
		}
		err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			evs, err := cp.Admin.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=rt-rogue,reason=PodCIDRRefused"})
			return err == nil && len(evs.Items) > 0, nil
		})
		if err != nil {
			t.Errorf("no PodCIDRRefused Event on the rogue Node: %v", err)
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
