//go:build e2e

package loadbalancer

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/stackward/stackward/e2e/framework"
)

// A Service whose load balancer the upstream CCM made (made here through
// the cloud's API as upstream makes it: its name, name tag, description,
// listener tag, a floating IP described as upstream describes it, and the
// load-balancer-id annotation upstream writes on the Service) keeps its
// external IP when Stackward takes over: no new load balancer or floating
// IP, one Normal AdoptingUpstreamLoadBalancer event and no Warning, a new
// port lands on it, and deleting the Service releases the floating IP as
// upstream would have.
func TestAServiceTakenOverFromTheUpstreamCCMKeepsItsAddress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l := newLab(ctx, t, framework.SimCloudOptions{}, "", nil, "up", 220, 2)
	cp, api := l.cp, l.api
	createNamespace(ctx, t, cp, "moved")
	t.Cleanup(func() { dropServices(t, cp, "moved") })
	const name = "kube_service_lab_moved_web"
	const nodePort = 31080

	var members []pools.CreateMemberOpts
	for _, ip := range l.nodeIPs() {
		members = append(members, pools.CreateMemberOpts{Address: ip, ProtocolPort: nodePort})
	}
	lb, err := loadbalancers.Create(ctx, api.octavia, loadbalancers.CreateOpts{
		Name: name, Description: "Kubernetes external service moved/web from cluster lab", Tags: []string{name},
		VipSubnetID: labSubnet(ctx, t, api),
		Listeners: []listeners.CreateOpts{{Name: "listener_0_" + name, Protocol: listeners.ProtocolTCP, ProtocolPort: 80, Tags: []string{name},
			DefaultPool: &pools.CreateOpts{Name: "pool_0_" + name, Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin, Members: members}}},
	}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	waitTree(ctx, t, api, 30*time.Second, "the upstream load balancer ACTIVE", func(st *octaviaState) bool { return st.LBs[name].Status == "ACTIVE" })
	fip, err := floatingips.Create(ctx, api.neutron, floatingips.CreateOpts{FloatingNetworkID: publicNetwork(ctx, t, api), PortID: lb.VipPortID,
		Description: "Floating IP for Kubernetes external service moved/web from cluster lab"}).Extract()
	if err != nil {
		t.Fatal(err)
	}

	svc := lbService("moved", "web", corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: nodePort})
	svc.Annotations["loadbalancer.openstack.org/load-balancer-id"] = lb.ID
	if _, err := cp.Admin.CoreV1().Services("moved").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The address upstream's service controller published: the evidence
	// that this load balancer is this Service's. A sync before it lands
	// refuses ("not adopting") and creates nothing. The CCM adds its
	// finalizer meanwhile: read again on a conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := cp.Admin.CoreV1().Services("moved").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: fip.FloatingIP}}
		_, err = cp.Admin.CoreV1().Services("moved").UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got := waitIngress(ctx, t, cp, "moved", "web", 90*time.Second)
	if ip := got.Status.LoadBalancer.Ingress[0].IP; ip != fip.FloatingIP {
		t.Errorf("ingress %s, want upstream's floating IP %s", ip, fip.FloatingIP)
	}
	st := waitTree(ctx, t, api, 30*time.Second, "the adopted load balancer tagged", func(st *octaviaState) bool {
		return slices.Contains(st.LBs[name].Tags, "stackward_adopted_from=openstack-ccm")
	})
	if st.N != 1 || st.LBs[name].ID != lb.ID {
		t.Errorf("%d load balancers (%s named %s), want only upstream's %s", st.N, st.LBs[name].ID, name, lb.ID)
	}
	if fips, err := api.floatingIPs(ctx); err != nil || len(fips) != 1 {
		t.Errorf("floating IPs %v (%v), want only upstream's", fips, err)
	}

	s, err := cp.Admin.CoreV1().Services("moved").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(8443)})
	if _, err := cp.Admin.CoreV1().Services("moved").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitTree(ctx, t, api, 60*time.Second, "listener TCP/443 on the adopted load balancer", func(st *octaviaState) bool {
		_, ok := st.LBs[name].Listeners["TCP/443"]
		return ok && st.N == 1 && st.LBs[name].ID == lb.ID && st.LBs[name].Status == "ACTIVE"
	})

	if err := cp.Admin.CoreV1().Services("moved").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Admin.CoreV1().Services("moved").Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("the Service kept its finalizer: %s", events(ctx, cp, "moved", "web"))
	}
	waitTree(ctx, t, api, 30*time.Second, "no load balancer", func(st *octaviaState) bool { return st.N == 0 })
	if fips, err := api.floatingIPs(ctx); err != nil || len(fips) != 0 {
		t.Errorf("floating IPs %v (%v) after delete, want upstream's released as upstream would", fips, err)
	}

	var list *corev1.EventList
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err = cp.Admin.CoreV1().Events("moved").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
		return err == nil && slices.ContainsFunc(list.Items, func(e corev1.Event) bool { return e.Reason == "DeletedLoadBalancer" }), nil
	}); err != nil {
		t.Fatalf("no DeletedLoadBalancer event: %v; events: %s", err, events(ctx, cp, "moved", "web"))
	}
	adopted := 0
	for _, e := range list.Items {
		switch {
		case e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "not adopting") && strings.Contains(e.Message, "shows none of their addresses"):
			// A sync before the status landed.
		case e.Type == corev1.EventTypeWarning:
			t.Errorf("Warning %s (x%d): %s", e.Reason, e.Count, e.Message)
		case e.Reason == "AdoptingUpstreamLoadBalancer":
			adopted++
		}
	}
	if adopted != 1 {
		t.Errorf("%d AdoptingUpstreamLoadBalancer events, want 1; events: %s", adopted, events(ctx, cp, "moved", "web"))
	}
}

// An operator's load balancer that merely has the name Stackward would
// look for (none of upstream's markers) is never adopted or deleted: the
// Service gets a Warning naming it and no load balancer is created, and
// deleting the Service leaves the operator's load balancer as it was.
func TestAnOperatorsLoadBalancerWithTheServicesNameIsNeverAdoptedOrDeleted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l := newLab(ctx, t, framework.SimCloudOptions{}, "", nil, "op", 225, 1)
	cp, api := l.cp, l.api
	createNamespace(ctx, t, cp, "stray")
	t.Cleanup(func() { dropServices(t, cp, "stray") })
	const name = "kube_service_lab_stray_api"
	lb, err := loadbalancers.Create(ctx, api.octavia, loadbalancers.CreateOpts{
		Name: name, Description: "made by hand", VipSubnetID: labSubnet(ctx, t, api)}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	waitTree(ctx, t, api, 30*time.Second, "the operator's load balancer ACTIVE", func(st *octaviaState) bool { return st.LBs[name].Status == "ACTIVE" })

	if _, err := cp.Admin.CoreV1().Services("stray").Create(ctx, lbService("stray", "api"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWarning(ctx, t, cp, "stray", "api", "SyncLoadBalancerFailed", "candidates: "+lb.ID)
	if err := cp.Admin.CoreV1().Services("stray").Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Admin.CoreV1().Services("stray").Get(ctx, "api", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("the Service kept its finalizer over a load balancer that was never its own: %s", events(ctx, cp, "stray", "api"))
	}
	st, err := api.state(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.N != 1 || st.LBs[name].ID != lb.ID || len(st.LBs[name].Tags) != 0 || st.LBs[name].Status != "ACTIVE" {
		t.Fatalf("load balancers %+v, want only the operator's, untagged and ACTIVE", st.LBs)
	}
}

// waitWarning waits for a Warning event of reason on the Service whose
// message says "not adopting" and names want.
func waitWarning(ctx context.Context, t *testing.T, cp *framework.ControlPlane, ns, name, reason, want string) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		return err == nil && slices.ContainsFunc(list.Items, func(e corev1.Event) bool {
			return e.Type == corev1.EventTypeWarning && e.Reason == reason && strings.Contains(e.Message, "not adopting") && strings.Contains(e.Message, want)
		}), nil
	}); err != nil {
		t.Fatalf("no Warning %s naming %s: %s", reason, want, events(ctx, cp, ns, name))
	}
}
