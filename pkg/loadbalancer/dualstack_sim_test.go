package loadbalancer_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// newDualStackEnv is newSimEnv on a cloud whose private network has an
// IPv4 and an IPv6 subnet, each node's port an address on both.
func newDualStackEnv(t *testing.T) (simEnv, map[string][2]string) {
	t.Helper()
	sd := cloudsim.DefaultSeed()
	for i := range sd.Networks {
		if sd.Networks[i].Name == "private" {
			sd.Networks[i].Subnets = append(sd.Networks[i].Subnets, cloudsim.SeedSubnet{Name: "private-v6", CIDR: "fd00:10::/64"})
		}
	}
	sd.Servers = []cloudsim.ServerSpec{
		{Name: "node-1", Flavor: "m1.small", NICs: []cloudsim.NICSpec{{Network: "private"}}},
		{Name: "node-2", Flavor: "m1.small", NICs: []cloudsim.NICSpec{{Network: "private"}}},
	}
	sim, err := cloudsim.New(cloudsim.Options{Seed: sd, RandSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	authURL, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	addrs := map[string][2]string{}
	for _, name := range []string{"node-1", "node-2"} {
		srv, ok := sim.ServerByName(name)
		if !ok {
			t.Fatalf("no server %s", name)
		}
		var pair [2]string
		for _, a := range srv.Addresses {
			if a.Type != "fixed" {
				continue
			}
			if a.Version == 6 {
				pair[1] = a.IP
			} else {
				pair[0] = a.IP
			}
		}
		if pair[0] == "" || pair[1] == "" {
			t.Fatalf("%s has addresses %v, want one of each family", name, pair)
		}
		addrs[name] = pair
	}
	env := connectSim(t, sim, authURL)
	env.m.Requeue = 20 * time.Millisecond
	return env, addrs
}

func dualStackNodes(addrs map[string][2]string) []*corev1.Node {
	var out []*corev1.Node
	for name, pair := range addrs {
		out = append(out, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: pair[0]}, {Type: corev1.NodeInternalIP, Address: pair[1]}}}})
	}
	return out
}

func TestIPFamiliesAgainstTheSimulator(t *testing.T) {
	env, addrs := newDualStackEnv(t)
	nodes := dualStackNodes(addrs)
	svc := func(name string, policy corev1.IPFamilyPolicy, families ...corev1.IPFamily) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, IPFamilyPolicy: &policy, IPFamilies: families,
				Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
	}
	read := func(t *testing.T, lbName string) (*loadbalancers.LoadBalancer, []string) {
		t.Helper()
		ctx := context.Background()
		pages, err := loadbalancers.List(env.octavia, loadbalancers.ListOpts{Name: lbName}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lbs, _ := loadbalancers.ExtractLoadBalancers(pages)
		if len(lbs) != 1 || len(lbs[0].Pools) != 1 {
			t.Fatalf("load balancers named %s: %+v", lbName, lbs)
		}
		mp, err := pools.ListMembers(env.octavia, lbs[0].Pools[0].ID, nil).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ms, _ := pools.ExtractMembers(mp)
		var out []string
		for _, m := range ms {
			if m.ProvisioningStatus != "PENDING_DELETE" { // replaced, on its way out (Octavia lists it until then)
				out = append(out, m.Address)
			}
		}
		return &lbs[0], out
	}
	isV6 := func(s string) bool { a, err := netip.ParseAddr(s); return err == nil && a.Is6() }

	t.Run("an IPv6 Service gets an IPv6 VIP as its ingress, IPv6 members and no floating IP", func(t *testing.T) {
		st := ensure(t, env.m, svc("v6", corev1.IPFamilyPolicySingleStack, corev1.IPv6Protocol), nodes)
		lb, ms := read(t, "kube_service_lab_shop_v6")
		if !isV6(lb.VipAddress) || len(st.Ingress) != 1 || st.Ingress[0].IP != lb.VipAddress {
			t.Errorf("VIP %s, ingress %+v: want the IPv6 VIP as the only ingress", lb.VipAddress, st.Ingress)
		}
		if len(ms) != 2 || !isV6(ms[0]) || !isV6(ms[1]) {
			t.Errorf("members %v, want the two nodes' IPv6 addresses", ms)
		}
		if n := env.sim.Calls()["network.floatingips.create"]; n != 0 {
			t.Errorf("%d floating IPs created for an IPv6 load balancer", n)
		}
	})

	t.Run("a PreferDualStack Service gets one load balancer with an IPv4 VIP behind a floating IP and an IPv6 additional VIP, members of both families", func(t *testing.T) {
		env.sim.ResetCalls()
		st := ensure(t, env.m, svc("dual", corev1.IPFamilyPolicyPreferDualStack, corev1.IPv4Protocol, corev1.IPv6Protocol), nodes)
		lb, ms := read(t, "kube_service_lab_shop_dual")
		if isV6(lb.VipAddress) || len(lb.AdditionalVips) != 1 || !isV6(lb.AdditionalVips[0].IPAddress) {
			t.Fatalf("VIP %s, additional VIPs %+v: want an IPv4 VIP and one IPv6 additional VIP", lb.VipAddress, lb.AdditionalVips)
		}
		if len(st.Ingress) != 2 || !strings.HasPrefix(st.Ingress[0].IP, "203.0.113.") || st.Ingress[1].IP != lb.AdditionalVips[0].IPAddress {
			t.Errorf("ingress %+v: want the floating IP, then the IPv6 VIP %s", st.Ingress, lb.AdditionalVips[0].IPAddress)
		}
		v4, v6 := 0, 0
		for _, m := range ms {
			if isV6(m) {
				v6++
			} else {
				v4++
			}
		}
		if v4 != 2 || v6 != 2 {
			t.Errorf("members %v, want both addresses of both nodes", ms)
		}
		if n := env.sim.Calls()["load-balancer.loadbalancers.create"]; n != 1 {
			t.Errorf("%d load balancer creates, want the one call", n)
		}
	})

	t.Run("a RequireDualStack IPv6-first Service lists its IPv6 VIP first and the floating IP of its IPv4 VIP second", func(t *testing.T) {
		st := ensure(t, env.m, svc("v6first", corev1.IPFamilyPolicyRequireDualStack, corev1.IPv6Protocol, corev1.IPv4Protocol), nodes)
		lb, _ := read(t, "kube_service_lab_shop_v6first")
		if !isV6(lb.VipAddress) || len(lb.AdditionalVips) != 1 || isV6(lb.AdditionalVips[0].IPAddress) {
			t.Fatalf("VIP %s, additional VIPs %+v: want an IPv6 VIP and an IPv4 additional VIP", lb.VipAddress, lb.AdditionalVips)
		}
		if len(st.Ingress) != 2 || st.Ingress[0].IP != lb.VipAddress || !strings.HasPrefix(st.Ingress[1].IP, "203.0.113.") {
			t.Errorf("ingress %+v: want the IPv6 VIP, then a floating IP", st.Ingress)
		}
	})

	t.Run("a single-stack Service turned RequireDualStack is refused, naming what to do, with nothing changed", func(t *testing.T) {
		s := svc("grow", corev1.IPFamilyPolicySingleStack, corev1.IPv4Protocol)
		before := ensure(t, env.m, s, nodes)
		lb, _ := read(t, "kube_service_lab_shop_grow")
		policy := corev1.IPFamilyPolicyRequireDualStack
		s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &policy, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		env.sim.ResetCalls()
		_, err := env.m.Ensure(context.Background(), "lab", s, nodes)
		if !errors.Is(err, loadbalancer.ErrImmutable) || !strings.Contains(err.Error(), "IPv6") || !strings.Contains(err.Error(), loadbalancer.AnnotationKeepFloatingIP) {
			t.Fatalf("Ensure: %v, want ErrImmutable naming the missing IPv6 VIP and %s", err, loadbalancer.AnnotationKeepFloatingIP)
		}
		for call, n := range env.sim.Calls() {
			if !strings.Contains(call, ".list") && !strings.Contains(call, ".get") && !strings.Contains(call, "tokens") {
				t.Errorf("%d %s calls after the refusal, want reads only", n, call)
			}
		}
		after, _ := read(t, "kube_service_lab_shop_grow")
		if after.ID != lb.ID || len(after.AdditionalVips) != 0 || len(before.Ingress) != 1 {
			t.Errorf("load balancer %s -> %s, additional VIPs %+v", lb.ID, after.ID, after.AdditionalVips)
		}
		t.Run("as PreferDualStack it keeps serving IPv4 only", func(t *testing.T) {
			prefer := corev1.IPFamilyPolicyPreferDualStack
			s.Spec.IPFamilyPolicy = &prefer
			st := ensure(t, env.m, s, nodes)
			_, ms := read(t, "kube_service_lab_shop_grow")
			if len(st.Ingress) != 1 || st.Ingress[0].IP != before.Ingress[0].IP {
				t.Errorf("ingress %+v, want the floating IP %s only", st.Ingress, before.Ingress[0].IP)
			}
			for _, m := range ms {
				if isV6(m) {
					t.Errorf("member %s: no IPv6 members without an IPv6 VIP", m)
				}
			}
		})
	})

	t.Run("a dual-stack Service turned single-stack keeps its load balancer and reports and balances IPv4 only", func(t *testing.T) {
		s := svc("shrink", corev1.IPFamilyPolicyRequireDualStack, corev1.IPv4Protocol, corev1.IPv6Protocol)
		ensure(t, env.m, s, nodes)
		lb, _ := read(t, "kube_service_lab_shop_shrink")
		single := corev1.IPFamilyPolicySingleStack
		s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &single, []corev1.IPFamily{corev1.IPv4Protocol}
		st := ensure(t, env.m, s, nodes)
		after, ms := read(t, "kube_service_lab_shop_shrink")
		if after.ID != lb.ID || len(st.Ingress) != 1 || isV6(st.Ingress[0].IP) {
			t.Errorf("load balancer %s -> %s, ingress %+v: want the same load balancer and its floating IP only", lb.ID, after.ID, st.Ingress)
		}
		if len(ms) != 2 || isV6(ms[0]) || isV6(ms[1]) {
			t.Errorf("members %v, want the two IPv4 addresses", ms)
		}
	})
}
