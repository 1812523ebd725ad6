package loadbalancer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"

	"github.com/stackward/stackward/pkg/loadbalancer"
)

// upstreamStyle says how to make a load balancer the way the upstream
// openstack-cloud-controller-manager (v1.36) makes one for Service
// shop/<svc> of cluster "lab": its name, that name as its tag, its
// description, listener_<i>_<name> with pool and monitor, and a floating
// IP described as upstream describes it. Fields change it for the cases
// that must not be adopted.
type upstreamStyle struct {
	svc         string
	tags        []string // nil: upstream's (the name)
	description *string  // nil: upstream's
}

type upstreamLB struct {
	id, vipPort, fipID, fip string
}

// makeUpstreamLB creates such a load balancer through the simulator's
// Octavia and Neutron APIs, as upstream calls them, and waits for ACTIVE.
func makeUpstreamLB(t *testing.T, env simEnv, u upstreamStyle) upstreamLB {
	t.Helper()
	ctx := context.Background()
	name := "kube_service_lab_shop_" + u.svc
	tags := u.tags
	if tags == nil {
		tags = []string{name}
	}
	desc := "Kubernetes external service shop/" + u.svc + " from cluster lab"
	if u.description != nil {
		desc = *u.description
	}
	lb, err := loadbalancers.Create(ctx, env.octavia, loadbalancers.CreateOpts{
		Name: name, Description: desc, VipSubnetID: env.subnetID, Tags: tags,
		Listeners: []listeners.CreateOpts{{
			Name: "listener_0_" + name, Protocol: listeners.ProtocolTCP, ProtocolPort: 80, Tags: []string{name},
			DefaultPool: &pools.CreateOpts{
				Name: "pool_0_" + name, Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin,
				Members: []pools.CreateMemberOpts{{Address: "10.0.0.11", ProtocolPort: 30080}, {Address: "10.0.0.12", ProtocolPort: 30080}},
				Monitor: &monitors.CreateOpts{Name: "monitor_0_" + name, Type: monitors.TypeTCP, Delay: 5, Timeout: 3, MaxRetries: 1},
			},
		}},
	}).Extract()
	if err != nil {
		t.Fatalf("create the upstream load balancer: %v", err)
	}
	waitActive(t, env, lb.ID)
	ext, err := env.net.ExternalNetworks(ctx)
	if err != nil || len(ext) == 0 {
		t.Fatalf("external networks %v: %v", ext, err)
	}
	fip, err := floatingips.Create(ctx, env.neutron, floatingips.CreateOpts{FloatingNetworkID: ext[0], PortID: lb.VipPortID,
		Description: "Floating IP for Kubernetes external service shop/" + u.svc + " from cluster lab"}).Extract()
	if err != nil {
		t.Fatalf("create the upstream floating IP: %v", err)
	}
	return upstreamLB{id: lb.ID, vipPort: lb.VipPortID, fipID: fip.ID, fip: fip.FloatingIP}
}

// published sets the Service's status.loadBalancer.ingress as a service
// controller writes it.
func published(svc *corev1.Service, ips ...string) *corev1.Service {
	svc.Status.LoadBalancer.Ingress = nil
	for _, ip := range ips {
		svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	return svc
}

func waitActive(t *testing.T, env simEnv, id string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		lb, err := loadbalancers.Get(context.Background(), env.octavia, id).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if lb.ProvisioningStatus == "ACTIVE" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("load balancer %s is %s", id, lb.ProvisioningStatus)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func allLBs(t *testing.T, env simEnv) []loadbalancers.LoadBalancer {
	t.Helper()
	pages, err := loadbalancers.List(env.octavia, loadbalancers.ListOpts{}).AllPages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lbs, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		t.Fatal(err)
	}
	return lbs
}

// fipState is "released", "kept detached" or "attached to <port>".
func fipState(t *testing.T, env simEnv, id string) string {
	t.Helper()
	f, err := floatingips.Get(context.Background(), env.neutron, id).Extract()
	switch {
	case err != nil && strings.Contains(err.Error(), "404"):
		return "released"
	case err != nil:
		t.Fatal(err)
	case f.PortID == "":
		return "kept detached"
	}
	return "attached to " + f.PortID
}

func updateUntilDone(t *testing.T, m *loadbalancer.Manager, svc *corev1.Service, nodes []*corev1.Node) {
	t.Helper()
	for range 100 {
		err := m.Update(context.Background(), "lab", svc, nodes)
		if err == nil {
			return
		}
		var re *api.RetryError
		if !errors.As(err, &re) {
			t.Fatalf("Update %s: %v", svc.Name, err)
		}
		time.Sleep(re.RetryAfter())
	}
	t.Fatalf("Update %s did not finish", svc.Name)
}

func withPort(svc *corev1.Service, port, nodePort int32) *corev1.Service {
	c := svc.DeepCopy()
	c.Spec.Ports = append(c.Spec.Ports, corev1.ServicePort{Name: fmt.Sprintf("p%d", port), Protocol: corev1.ProtocolTCP, Port: port, NodePort: nodePort})
	return c
}

// A Service whose load balancer the upstream CCM made keeps its address
// when Stackward takes over: the load balancer is adopted (no new one,
// no new floating IP), a new port lands on it, and deleting the Service
// leaves what upstream would have left.
func TestAnUpstreamLoadBalancerIsAdoptedAndDeletedAsUpstreamWould(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations func(lb upstreamLB) map[string]string
		lbIP        bool   // spec.loadBalancerIP names the floating IP
		wantFIP     string // after delete
	}{
		{name: "found by its name, name tag and description, its floating IP is released on delete",
			annotations: func(upstreamLB) map[string]string { return nil }, wantFIP: "released"},
		{name: "named by the load-balancer-id annotation upstream wrote, it is adopted rather than shared",
			annotations: func(lb upstreamLB) map[string]string {
				return map[string]string{loadbalancer.AnnotationLoadBalancerID: lb.id}
			}, wantFIP: "released"},
		{name: "with keep-floatingip its floating IP is kept on delete",
			annotations: func(lb upstreamLB) map[string]string {
				return map[string]string{loadbalancer.AnnotationLoadBalancerID: lb.id, loadbalancer.AnnotationKeepFloatingIP: "true"}
			}, wantFIP: "kept detached"},
		{name: "with spec.loadBalancerIP naming its floating IP that address is kept on delete",
			annotations: func(upstreamLB) map[string]string { return nil }, lbIP: true, wantFIP: "kept detached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newSimEnv(t, 20*time.Millisecond)
			env.m.Requeue = 20 * time.Millisecond
			up := makeUpstreamLB(t, env, upstreamStyle{svc: "web"})
			svc := simService("web", 80, 30080, tc.annotations(up))
			if tc.lbIP {
				svc.Spec.LoadBalancerIP = up.fip
			}
			published(svc, up.fip) // upstream's service controller wrote it
			ctx := context.Background()
			_, exists, err := env.m.Get(ctx, "lab", svc)
			if err != nil || !exists {
				t.Fatalf("Get before adoption: exists %v, %v; want the upstream load balancer reported", exists, err)
			}
			env.sim.ResetCalls()
			st := ensure(t, env.m, svc, simNodes("10.0.0.11", "10.0.0.12"))
			if len(st.Ingress) != 1 || st.Ingress[0].IP != up.fip {
				t.Errorf("ingress %v, want upstream's floating IP %s", st.Ingress, up.fip)
			}
			calls := env.sim.Calls()
			if calls["load-balancer.loadbalancers.create"] != 0 || calls["network.floatingips.create"] != 0 {
				t.Errorf("adoption created resources: %v", calls)
			}
			lbs := allLBs(t, env)
			if len(lbs) != 1 || lbs[0].ID != up.id {
				t.Fatalf("load balancers %v, want only upstream's %s", lbs, up.id)
			}
			for _, tag := range []string{"kube_cluster_uid=uid-1", "kube_service_lab_shop_web", "stackward_adopted_from=openstack-ccm"} {
				if !slices.Contains(lbs[0].Tags, tag) {
					t.Errorf("tags %v lack %s", lbs[0].Tags, tag)
				}
			}

			wider := withPort(svc, 8080, 30808)
			ensure(t, env.m, wider, simNodes("10.0.0.11", "10.0.0.12"))
			pages, err := listeners.List(env.octavia, listeners.ListOpts{LoadbalancerID: up.id}).AllPages(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ls, _ := listeners.ExtractListeners(pages)
			var ports []int
			for _, l := range ls {
				ports = append(ports, l.ProtocolPort)
			}
			slices.Sort(ports)
			if !slices.Equal(ports, []int{80, 8080}) {
				t.Errorf("listener ports %v on the adopted load balancer, want [80 8080]", ports)
			}
			if n := len(allLBs(t, env)); n != 1 {
				t.Errorf("%d load balancers after the new port, want 1", n)
			}

			// A node leaving is Update's: it lands on the adopted load balancer too.
			updateUntilDone(t, env.m, wider, simNodes("10.0.0.11"))
			for _, l := range ls {
				mp, err := pools.ListMembers(env.octavia, l.DefaultPoolID, nil).AllPages(ctx)
				if err != nil {
					t.Fatal(err)
				}
				all, _ := pools.ExtractMembers(mp)
				// The last change may still be settling: a member being
				// deleted is gone as far as the Service is concerned.
				ms := slices.DeleteFunc(all, func(m pools.Member) bool { return m.ProvisioningStatus == "PENDING_DELETE" })
				if len(ms) != 1 || ms[0].Address != "10.0.0.11" {
					t.Errorf("members of listener %d after a node left: %+v, want 10.0.0.11 alone", l.ProtocolPort, ms)
				}
			}

			deleteUntilDone(t, env.m, wider)
			deadline := time.Now().Add(5 * time.Second)
			for len(allLBs(t, env)) > 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if n := len(allLBs(t, env)); n != 0 {
				t.Errorf("%d load balancers after delete, want 0", n)
			}
			if got := fipState(t, env, up.fipID); got != tc.wantFIP {
				t.Errorf("floating IP %s after delete: %s, want %s", up.fip, got, tc.wantFIP)
			}
		})
	}
}

// Two Services upstream put on one load balancer (the second names it in
// its load-balancer-id annotation, and its name is a tag on the load
// balancer and on its listener): after the switch both keep the address,
// the creator's Service adopts the load balancer, the second leaves it on
// delete, and the last one out deletes it and releases the floating IP.
func TestTwoServicesSharingAnUpstreamLoadBalancerKeepItAndTheLastOneOutDeletesIt(t *testing.T) {
	env := newSimEnv(t, 20*time.Millisecond)
	env.m.Requeue = 20 * time.Millisecond
	ctx := context.Background()
	up := makeUpstreamLB(t, env, upstreamStyle{svc: "web"})
	const second = "kube_service_lab_shop_api"
	if _, err := listeners.Create(ctx, env.octavia, listeners.CreateOpts{LoadbalancerID: up.id, Name: "listener_0_" + second,
		Protocol: listeners.ProtocolTCP, ProtocolPort: 81, Tags: []string{second}}).Extract(); err != nil {
		t.Fatal(err)
	}
	waitActive(t, env, up.id)
	tags := []string{"kube_service_lab_shop_web", second}
	if _, err := loadbalancers.Update(ctx, env.octavia, up.id, loadbalancers.UpdateOpts{Tags: &tags}).Extract(); err != nil {
		t.Fatal(err)
	}
	waitActive(t, env, up.id)

	nodes := simNodes("10.0.0.11", "10.0.0.12")
	api := published(simService("api", 81, 30081, map[string]string{loadbalancer.AnnotationLoadBalancerID: up.id}), up.fip)
	web := published(simService("web", 80, 30080, map[string]string{loadbalancer.AnnotationLoadBalancerID: up.id}), up.fip)
	// Until web has adopted it the load balancer is nobody's: api, of
	// another cluster of this name for all Stackward can tell, waits.
	_, err := env.m.Ensure(ctx, "lab", api, nodes)
	if loadbalancer.ProgressReason(fmt.Sprint(err)) != loadbalancer.ReasonWaitingForAdoption {
		t.Fatalf("Ensure api before web adopted the load balancer: %v, want %s", err, loadbalancer.ReasonWaitingForAdoption)
	}
	for _, svc := range []*corev1.Service{web, api} {
		st := ensure(t, env.m, svc, nodes)
		if len(st.Ingress) != 1 || st.Ingress[0].IP != up.fip {
			t.Errorf("%s: ingress %v, want upstream's floating IP %s", svc.Name, st.Ingress, up.fip)
		}
	}
	lbs := allLBs(t, env)
	if len(lbs) != 1 || !slices.Contains(lbs[0].Tags, "stackward_adopted_from=openstack-ccm") || !slices.Contains(lbs[0].Tags, second) {
		t.Fatalf("load balancers %+v, want upstream's alone, adopted, still shared", lbs)
	}

	deleteUntilDone(t, env.m, api)
	if n := len(allLBs(t, env)); n != 1 {
		t.Fatalf("%d load balancers after the second Service left, want 1", n)
	}
	if got := fipState(t, env, up.fipID); got != "attached to "+up.vipPort {
		t.Errorf("floating IP after the second Service left: %s", got)
	}
	deleteUntilDone(t, env.m, web)
	deadline := time.Now().Add(5 * time.Second)
	for len(allLBs(t, env)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(allLBs(t, env)); n != 0 {
		t.Errorf("%d load balancers after the last Service, want 0", n)
	}
	if got := fipState(t, env, up.fipID); got != "released" {
		t.Errorf("floating IP after the last Service: %s, want released", got)
	}
}
