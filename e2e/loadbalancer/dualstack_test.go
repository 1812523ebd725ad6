//go:build e2e

package loadbalancer

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

// TestDualStackService runs on a control plane of its own with IPv4 and
// IPv6 Service ranges (the package's other tests keep the IPv4-only lab),
// and a cloud whose node network has an IPv6 subnet: its nodes report both
// addresses.
func TestDualStackService(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cp := framework.ReplaceSharedControlPlane(t, framework.ControlPlaneOptions{DualStack: true})
	t.Cleanup(func() { framework.ReplaceSharedControlPlane(t, framework.ControlPlaneOptions{}) })
	l := &lab{cp: cp, cloud: framework.StartSimCloud(t, framework.SimCloudOptions{OctaviaDelay: 300 * time.Millisecond, DualStack: true}),
		nodes: map[string]*framework.Node{}, ips: map[string]string{}}
	l.api = newCloudAPI(ctx, t, l.cloud)
	l.conf = l.cloud.CloudConf(t, "")
	l.stop = startCCM(ctx, t, cp, l.conf)
	v6 := map[string]string{}
	for i := 1; i <= 2; i++ {
		name := fmt.Sprintf("ds-%d", i)
		l.cloud.CreateDualStackServer(t, name, 190+i, "m1.small", "az-1")
		t.Cleanup(func() { _ = cp.Admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		l.nodes[name] = cp.StartNode(t, framework.NodeOptions{Name: name, IP: framework.NodeIP(190 + i), IPv6: framework.NodeIPv6(190 + i)})
		l.ips[name], v6[name] = framework.NodeIP(190+i), framework.NodeIPv6(190+i)
		if _, err := cp.WaitForNode(ctx, name, 90*time.Second, func(n *corev1.Node) bool {
			return n.Spec.ProviderID != "" && !framework.HasTaint(n, uninitializedTaint) && internalIPs(n) == 2
		}); err != nil {
			t.Fatalf("node %s not initialized with both addresses: %v", name, err)
		}
	}
	createNamespace(ctx, t, cp, "ds")
	t.Cleanup(func() { dropServices(t, cp, "ds") })

	t.Run("a RequireDualStack Service gets one load balancer with an IPv6 additional VIP and both addresses in status", func(t *testing.T) {
		svc := lbService("ds", "web")
		policy := corev1.IPFamilyPolicyRequireDualStack
		svc.Spec.IPFamilyPolicy = &policy
		created, err := cp.Admin.CoreV1().Services("ds").Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(created.Spec.ClusterIPs) != 2 {
			t.Fatalf("cluster IPs %v: the control plane is not dual-stack", created.Spec.ClusterIPs)
		}
		var got *corev1.Service
		err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			s, err := cp.Admin.CoreV1().Services("ds").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			got = s
			return len(s.Status.LoadBalancer.Ingress) == 2, nil
		})
		if err != nil {
			t.Fatalf("ingress %+v, want two addresses: %v; events: %s", got.Status.LoadBalancer.Ingress, err, events(ctx, cp, "ds", "web"))
		}
		pages, err := loadbalancers.List(l.api.octavia, loadbalancers.ListOpts{Name: "kube_service_lab_ds_web"}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lbs, err := loadbalancers.ExtractLoadBalancers(pages)
		if err != nil || len(lbs) != 1 {
			t.Fatalf("load balancers named kube_service_lab_ds_web: %+v, %v", lbs, err)
		}
		lb := lbs[0]
		if len(lb.AdditionalVips) != 1 || !framework.NodeNetworkV6.Contains(netip.MustParseAddr(lb.AdditionalVips[0].IPAddress)) {
			t.Fatalf("VIP %s, additional VIPs %+v: want one IPv6 additional VIP on %s", lb.VipAddress, lb.AdditionalVips, framework.NodeNetworkV6)
		}
		ing := got.Status.LoadBalancer.Ingress
		fips, err := l.api.floatingIPs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var fip string
		for _, f := range fips {
			if f.PortID == lb.VipPortID {
				fip = f.FloatingIP
			}
		}
		if fip == "" || ing[0].IP != fip || ing[1].IP != lb.AdditionalVips[0].IPAddress {
			t.Errorf("ingress %+v, want the IPv4 VIP's floating IP %q, then the IPv6 VIP %s", ing, fip, lb.AdditionalVips[0].IPAddress)
		}
		var want []string
		for name := range l.ips {
			want = append(want, l.ips[name], v6[name])
		}
		err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := poolAddresses(ctx, l.api, lb.ID)
			if err != nil {
				return false, nil
			}
			slices.Sort(got)
			slices.Sort(want)
			return slices.Equal(got, want), nil
		})
		if err != nil {
			got, _ := poolAddresses(ctx, l.api, lb.ID)
			t.Errorf("members %v, want both addresses of both nodes %v", got, want)
		}
	})

	t.Run("a single-stack Service turned RequireDualStack keeps its load balancer and gets an Event saying to recreate it", func(t *testing.T) {
		svc := lbService("ds", "grow")
		single := corev1.IPFamilyPolicySingleStack
		svc.Spec.IPFamilyPolicy = &single
		if _, err := cp.Admin.CoreV1().Services("ds").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		before := waitIngress(ctx, t, cp, "ds", "grow", 90*time.Second)
		st, err := l.api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lbBefore := st.LBs["kube_service_lab_ds_grow"].ID
		patch := []byte(`{"spec":{"ipFamilyPolicy":"RequireDualStack","ipFamilies":["IPv4","IPv6"]}}`)
		if _, err := cp.Admin.CoreV1().Services("ds").Patch(ctx, "grow", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		var evs string
		err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			evs = events(ctx, cp, "ds", "grow")
			return strings.Contains(evs, "RequireDualStack") && strings.Contains(evs, "keep-floatingip"), nil
		})
		if err != nil {
			t.Fatalf("no Event naming RequireDualStack and keep-floatingip: %v; events: %s", err, evs)
		}
		after, err := cp.Admin.CoreV1().Services("ds").Get(ctx, "grow", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st, err = l.api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.LBs["kube_service_lab_ds_grow"].ID != lbBefore || !equality.Semantic.DeepEqual(after.Status.LoadBalancer.Ingress, before.Status.LoadBalancer.Ingress) {
			t.Errorf("load balancer %s -> %s, ingress %+v -> %+v: want both unchanged", lbBefore, st.LBs["kube_service_lab_ds_grow"].ID,
				before.Status.LoadBalancer.Ingress, after.Status.LoadBalancer.Ingress)
		}
	})
}

func internalIPs(n *corev1.Node) int {
	c := 0
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			c++
		}
	}
	return c
}

// poolAddresses lists the member addresses of the load balancer's pool.
func poolAddresses(ctx context.Context, a *cloudAPI, lbID string) ([]string, error) {
	pages, err := pools.List(a.octavia, pools.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
	if err != nil {
		return nil, err
	}
	ps, err := pools.ExtractPools(pages)
	if err != nil || len(ps) != 1 {
		return nil, fmt.Errorf("pools %+v: %w", ps, err)
	}
	mp, err := pools.ListMembers(a.octavia, ps[0].ID, nil).AllPages(ctx)
	if err != nil {
		return nil, err
	}
	ms, err := pools.ExtractMembers(mp)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Address)
	}
	return out, nil
}
