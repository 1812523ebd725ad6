//go:build e2e

package loadbalancer

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

// With lb-provider = ovn (cloudsim's ovn provider answers as Octavia with
// ovn-octavia-provider does) a plain Service works with the provider's
// defaults, and one asking for what the provider cannot do gets an Event
// naming the annotation and the provider, and no load balancer.
func TestOVNProviderServices(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The lab fills in the router ID; this test needs none (a comment).
	conf := "[LoadBalancer]\nlb-provider = ovn\n; router %s\n"
	l := newLab(ctx, t, framework.SimCloudOptions{OctaviaDelay: 300 * time.Millisecond}, conf, nil, "ovn", 200, 2)
	cp, api := l.cp, l.api
	createNamespace(ctx, t, cp, "ovn")
	// Services outlive the test in the shared control plane: a later test's CCM
	// (another cloud, amphora) would build the refused L7 one there.
	t.Cleanup(func() { dropServices(t, cp, "ovn") })

	t.Run("a plain Service with a health monitor works with SOURCE_IP_PORT", func(t *testing.T) {
		svc := lbService("ovn", "plain",
			corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
			corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(5353)})
		svc.Annotations["loadbalancer.openstack.org/enable-health-monitor"] = "true"
		if _, err := cp.Admin.CoreV1().Services("ovn").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitIngress(ctx, t, cp, "ovn", "plain", 90*time.Second)
		const name = "kube_service_lab_ovn_plain"
		st := waitTree(ctx, t, api, 60*time.Second, "monitors on both listeners", func(st *octaviaState) bool {
			lb := st.LBs[name]
			return lb.Status == "ACTIVE" && lb.Listeners["TCP/80"].Monitor == "TCP" && lb.Listeners["UDP/53"].Monitor == "UDP-CONNECT"
		})
		page, err := pools.List(api.octavia, pools.ListOpts{LoadbalancerID: st.LBs[name].ID}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ps, _ := pools.ExtractPools(page)
		for _, p := range ps {
			if p.LBMethod != "SOURCE_IP_PORT" || len(p.Members) != 2 {
				t.Errorf("pool %s: %s with %d members, want SOURCE_IP_PORT with 2", p.Name, p.LBMethod, len(p.Members))
			}
		}
	})

	t.Run("deleting it leaves no load balancer and no VIP port", func(t *testing.T) {
		if err := cp.Admin.CoreV1().Services("ovn").Delete(ctx, "plain", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitTree(ctx, t, api, 60*time.Second, "no load balancer", func(st *octaviaState) bool { return st.N == 0 })
		page, err := ports.List(api.neutron, ports.ListOpts{}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all, _ := ports.ExtractPorts(page)
		for _, p := range all {
			if strings.HasPrefix(p.Name, "ovn-lb-vip-") {
				t.Errorf("VIP port %s (%s) left", p.Name, p.ID)
			}
		}
	})

	t.Run("x-forwarded-for is refused with an Event naming it and the provider, and nothing is created", func(t *testing.T) {
		before, err := api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		svc := lbService("ovn", "l7")
		svc.Annotations["loadbalancer.openstack.org/x-forwarded-for"] = "true"
		if _, err := cp.Admin.CoreV1().Services("ovn").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var msg string
		if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			list, err := cp.Admin.CoreV1().Events("ovn").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=l7"})
			if err != nil {
				return false, nil
			}
			i := slices.IndexFunc(list.Items, func(e corev1.Event) bool {
				return e.Type == corev1.EventTypeWarning && e.Reason == "SyncLoadBalancerFailed"
			})
			if i >= 0 {
				msg = list.Items[i].Message
			}
			return i >= 0, nil
		}); err != nil {
			t.Fatalf("no SyncLoadBalancerFailed Warning: %s", events(ctx, cp, "ovn", "l7"))
		}
		for _, want := range []string{"loadbalancer.openstack.org/x-forwarded-for", `provider "ovn"`} {
			if !strings.Contains(msg, want) {
				t.Errorf("Event %q does not name %s", msg, want)
			}
		}
		after, err := api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after.N != before.N {
			t.Errorf("load balancers: %d before, %d after the refused Service", before.N, after.N)
		}
	})
}
