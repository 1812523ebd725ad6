//go:build e2e

package loadbalancers

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

// TestServiceLoadBalancerWithTheAmphoraProvider: a Service of type
// LoadBalancer with lb-provider = amphora gets an ACTIVE load balancer whose
// pool has every node as a member, its VIP as the Service's ingress, and
// deleting the Service leaves no load balancer behind; on both clouds.
func TestServiceLoadBalancerWithTheAmphoraProvider(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	for _, b := range framework.Backends(t) {
		t.Run(b.Cloud.Name(), func(t *testing.T) { providerService(t, cp, b, "amphora", "") })
	}
}

// TestServiceLoadBalancerWithTheOVNProvider is the same with lb-provider =
// ovn and nothing else: Stackward's defaults for that provider (algorithm
// SOURCE_IP_PORT, TCP monitors, children in separate calls) must be ones the
// real OVN provider accepts. Before them, real Octavia answered a plain
// Service with 501 "OVN provider does not support ROUND_ROBIN algorithm".
func TestServiceLoadBalancerWithTheOVNProvider(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	for _, b := range framework.Backends(t) {
		b.FirstNode += 50 // apart from the amphora scenario's nodes
		t.Run(b.Cloud.Name(), func(t *testing.T) { providerService(t, cp, b, "ovn", "") })
	}
}

// providerService runs the scenario with lb-provider = provider and extra
// [LoadBalancer] lines.
func providerService(t *testing.T, cp *framework.ControlPlane, b framework.Backend, provider, extra string) {
	cloud := b.Cloud
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var nodeIPs []string
	for i := range 2 {
		idx := b.FirstNode + 20 + i
		cp.JoinCloudNode(t, cloud, fmt.Sprintf("%s-%s-%d", cloud.Name(), provider, i), idx)
		nodeIPs = append(nodeIPs, framework.NodeIP(idx))
	}
	// No floating IP: the VIP itself is the ingress.
	conf := cloud.CloudConf(t, "\n[LoadBalancer]\nlb-provider = "+provider+"\n"+extra)
	cp.StartCCM(ctx, t, conf)
	for i := range 2 {
		cp.WaitInitialized(ctx, t, fmt.Sprintf("%s-%s-%d", cloud.Name(), provider, i))
	}
	api := framework.NewCloudAPI(ctx, t, conf)
	octavia := api.Octavia

	ns := provider + "-" + cloud.Name()
	if _, err := cp.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Annotations: map[string]string{
			"service.beta.kubernetes.io/openstack-internal-load-balancer": "true",
		}},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	svc, err := cp.Admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lbName := "kube_service_lab_" + ns + "_web"

	t.Run("the Service gets an ACTIVE load balancer of the provider with every node as a member and its VIP as ingress", func(t *testing.T) {
		var ingress string
		err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			s, err := cp.Admin.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil || len(s.Status.LoadBalancer.Ingress) == 0 {
				return false, nil
			}
			svc, ingress = s, s.Status.LoadBalancer.Ingress[0].IP
			return ingress != "", nil
		})
		if err != nil {
			t.Fatalf("service got no ingress: %v", err)
		}
		// A node's member change may still be settling: wait for ACTIVE.
		var lbs []loadbalancers.LoadBalancer
		_ = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			lbs = api.LoadBalancersNamed(ctx, t, lbName)
			return len(lbs) == 1 && lbs[0].ProvisioningStatus == "ACTIVE", nil
		})
		if len(lbs) != 1 {
			t.Fatalf("%d load balancers named %s, want 1", len(lbs), lbName)
		}
		lb := lbs[0]
		if lb.ProvisioningStatus != "ACTIVE" || lb.Provider != provider || lb.VipAddress != ingress {
			t.Errorf("load balancer status %s provider %s VIP %s; want ACTIVE, %s, the ingress %s", lb.ProvisioningStatus, lb.Provider, lb.VipAddress, provider, ingress)
		}
		if len(lb.Pools) != 1 {
			t.Fatalf("load balancer has %d pools, want 1", len(lb.Pools))
		}
		pages, err := pools.ListMembers(octavia, lb.Pools[0].ID, nil).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		members, err := pools.ExtractMembers(pages)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range members {
			got = append(got, fmt.Sprintf("%s:%d", m.Address, m.ProtocolPort))
		}
		var want []string
		for _, ip := range nodeIPs {
			want = append(want, fmt.Sprintf("%s:%d", ip, svc.Spec.Ports[0].NodePort))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("members %v, want %v", got, want)
		}
	})

	t.Run("deleting the Service deletes its load balancer", func(t *testing.T) {
		if err := cp.Admin.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			return len(api.LoadBalancersNamed(ctx, t, lbName)) == 0, nil
		})
		if err != nil {
			t.Fatalf("load balancer %s still there: %v", lbName, err)
		}
	})

	// Octavia's PENDING_* states are normal progress: on the real cloud they
	// last seconds, and each used to be a SyncLoadBalancerFailed Warning.
	t.Run("creating and deleting the Service recorded no Warning, only Normal events", func(t *testing.T) {
		var events []corev1.Event
		// The recorder writes asynchronously: wait for the last step's event.
		err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := cp.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
			if err != nil {
				return false, nil
			}
			events = list.Items
			return slices.ContainsFunc(events, func(e corev1.Event) bool { return e.Reason == "DeletedLoadBalancer" }), nil
		})
		if err != nil {
			t.Fatalf("no DeletedLoadBalancer event: %v; events %v", err, eventSummary(events))
		}
		for _, e := range events {
			if e.Type == corev1.EventTypeWarning {
				t.Errorf("Warning %s: %s (events %v)", e.Reason, e.Message, eventSummary(events))
			}
		}
		t.Logf("%s: events %v", cloud.Name(), eventSummary(events))
	})
}

// eventSummary lists events as type/reason×count.
func eventSummary(events []corev1.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, fmt.Sprintf("%s/%s×%d", e.Type, e.Reason, e.Count))
	}
	return out
}
