//go:build e2e

package loadbalancer

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

func TestServiceVariants(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l := newLab(ctx, t, framework.SimCloudOptions{OctaviaDelay: 500 * time.Millisecond}, "", nil, "var", 100, 2)
	cp, api := l.cp, l.api
	createNamespace(ctx, t, cp, "variants")
	t.Cleanup(func() { dropServices(t, cp, "variants") })

	t.Run("an internal SCTP Service with externalTrafficPolicy Local gets its VIP and an HTTP monitor on the health check port", func(t *testing.T) {
		svc := lbService("variants", "internal", corev1.ServicePort{Name: "sig", Protocol: corev1.ProtocolSCTP, Port: 2905, TargetPort: intstr.FromInt32(2905)})
		svc.Annotations["service.beta.kubernetes.io/openstack-internal-load-balancer"] = "true"
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		if _, err := cp.Admin.CoreV1().Services("variants").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := waitIngress(ctx, t, cp, "variants", "internal", 90*time.Second)
		ip, err := netip.ParseAddr(got.Status.LoadBalancer.Ingress[0].IP)
		if err != nil || !framework.NodeNetwork.Contains(ip) {
			t.Errorf("ingress %v, want a VIP on the node network %s", got.Status.LoadBalancer.Ingress, framework.NodeNetwork)
		}
		st, err := api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lt := st.LBs["kube_service_lab_variants_internal"].Listeners["SCTP/2905"]
		if lt.PoolProtocol != "SCTP" || lt.Monitor != "HTTP" || len(lt.Members) != 2 {
			t.Errorf("listener %+v, want an SCTP pool with an HTTP monitor and 2 members", lt)
		}
		fips, _ := api.floatingIPs(ctx)
		for _, f := range fips {
			if f.PortID == st.LBs["kube_service_lab_variants_internal"].VIPPortID {
				t.Errorf("internal load balancer has floating IP %s", f.FloatingIP)
			}
		}
	})

	t.Run("a floating IP the user reserved is used, kept and only detached on delete; source ranges and proxy protocol apply", func(t *testing.T) {
		pages, err := networks.List(api.neutron, networks.ListOpts{Name: framework.FloatingNetwork}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		nets, _ := networks.ExtractNetworks(pages)
		reserved, err := floatingips.Create(ctx, api.neutron, floatingips.CreateOpts{FloatingNetworkID: nets[0].ID, Description: "reserved by the user"}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		svc := lbService("variants", "edge")
		svc.Spec.LoadBalancerIP = reserved.FloatingIP
		svc.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
		svc.Annotations["loadbalancer.openstack.org/proxy-protocol"] = "v2"
		if _, err := cp.Admin.CoreV1().Services("variants").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := waitIngress(ctx, t, cp, "variants", "edge", 90*time.Second)
		if got.Status.LoadBalancer.Ingress[0].IP != reserved.FloatingIP {
			t.Errorf("ingress %v, want the reserved %s", got.Status.LoadBalancer.Ingress, reserved.FloatingIP)
		}
		st, err := api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lt := st.LBs["kube_service_lab_variants_edge"].Listeners["TCP/80"]
		if lt.PoolProtocol != "PROXYV2" || !slices.Equal(lt.AllowedCIDRs, []string{"192.0.2.0/24"}) {
			t.Errorf("listener %+v, want a PROXYV2 pool and allowed_cidrs 192.0.2.0/24", lt)
		}
		if err := cp.Admin.CoreV1().Services("variants").Delete(ctx, "edge", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := cp.Admin.CoreV1().Services("variants").Get(ctx, "edge", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatal("the Service was not deleted")
		}
		f, err := floatingips.Get(ctx, api.neutron, reserved.ID).Extract()
		if err != nil {
			t.Fatalf("the reserved floating IP is gone: %v", err)
		}
		if f.PortID != "" {
			t.Errorf("the reserved floating IP is still attached to %s", f.PortID)
		}
	})
}
