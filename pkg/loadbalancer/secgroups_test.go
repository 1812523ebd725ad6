package loadbalancer

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// sgEnv is a Manager with manage-security-groups on: three node ports on
// the nodes' subnet, one carrying the operator's group, and a port of
// someone else on the same subnet.
func sgEnv(t *testing.T) (*Manager, *fakeOctavia, *fakeSecGroups) {
	t.Helper()
	oct, net, sgs := newFakeOctavia(), newFakeNeutron(), newFakeSecGroups()
	m := newManager(oct, net)
	m.Config.ManageSecurityGroups = true
	m.SecurityGroups = sgs
	sgs.addPort("port-a", "subnet-nodes", "10.0.0.1", "operator-sg")
	sgs.addPort("port-b", "subnet-nodes", "10.0.0.2", "default")
	sgs.addPort("port-c", "subnet-nodes", "10.0.0.3", "default")
	sgs.addPort("port-other", "subnet-nodes", "10.0.0.50", "someone-else")
	return m, oct, sgs
}

func sgService(mut ...func(*corev1.Service)) *corev1.Service {
	return service(append([]func(*corev1.Service){func(s *corev1.Service) {
		s.UID = types.UID("6b1a0f4e-uid")
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053})
	}}, mut...)...)
}

func (f *fakeSecGroups) only(t *testing.T) *SecurityGroup {
	t.Helper()
	if len(f.groups) != 1 {
		t.Fatalf("security groups %v, want exactly one", f.groups)
	}
	for _, g := range f.groups {
		return g
	}
	return nil
}

func ingress(g *SecurityGroup) []string {
	var out []string
	for _, r := range g.Rules {
		if r.Direction == "ingress" {
			out = append(out, r.Key())
		}
	}
	slices.Sort(out)
	return out
}

func TestSecurityGroupOpensTheNodePortsOnTheMemberPortsOnly(t *testing.T) {
	m, oct, sgs := sgEnv(t)
	svc := sgService()
	converge(t, m, oct, svc, sgNodes("10.0.0.1", "10.0.0.2"))

	g := sgs.only(t)
	if g.Name != "lb-sg-6b1a0f4e-uid-shop-web" || g.Description != "Security Group for shop/web Service LoadBalancer in cluster lab" {
		t.Errorf("group %q %q, want upstream's name and description", g.Name, g.Description)
	}
	want := []string{"ingress/IPv4/tcp/30080-30080/10.0.0.0/24", "ingress/IPv4/udp/30053-30053/10.0.0.0/24"}
	if got := ingress(g); !slices.Equal(got, want) {
		t.Errorf("rules %v, want %v", got, want)
	}
	for id, want := range map[string][]string{
		"port-a": {"operator-sg", g.ID}, "port-b": {"default", g.ID}, "port-c": {"default"}, "port-other": {"someone-else"},
	} {
		if got := sgs.ports[id].SecurityGroups; !slices.Equal(got, want) {
			t.Errorf("%s groups %v, want %v", id, got, want)
		}
	}

	t.Run("an unchanged Service reads one group list and one port list", func(t *testing.T) {
		sgs.calls = nil
		converge(t, m, oct, svc, sgNodes("10.0.0.1", "10.0.0.2"))
		if !slices.Equal(sgs.calls, []string{"list_security_groups", "list_ports"}) {
			t.Errorf("calls %v", sgs.calls)
		}
	})

	t.Run("a node leaving loses our group and keeps the others", func(t *testing.T) {
		if err := m.Update(context.Background(), "lab", svc, sgNodes("10.0.0.2", "10.0.0.3")); err != nil && !isRetry(err) {
			t.Fatal(err)
		}
		converge(t, m, oct, svc, sgNodes("10.0.0.2", "10.0.0.3"))
		for id, want := range map[string][]string{"port-a": {"operator-sg"}, "port-b": {"default", g.ID}, "port-c": {"default", g.ID}} {
			if got := sgs.ports[id].SecurityGroups; !slices.Equal(got, want) {
				t.Errorf("%s groups %v, want %v", id, got, want)
			}
		}
	})

	t.Run("a removed Service port removes its rule; a health check node port is opened", func(t *testing.T) {
		svc2 := service(func(s *corev1.Service) {
			s.UID = svc.UID
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = 32000
		})
		converge(t, m, oct, svc2, sgNodes("10.0.0.2", "10.0.0.3"))
		want := []string{"ingress/IPv4/tcp/30080-30080/10.0.0.0/24", "ingress/IPv4/tcp/32000-32000/10.0.0.0/24"}
		if got := ingress(sgs.only(t)); !slices.Equal(got, want) {
			t.Errorf("rules %v, want %v", got, want)
		}
	})

	t.Run("delete takes our group off every port and deletes it, nothing else changes", func(t *testing.T) {
		if err := m.Delete(context.Background(), "lab", svc); err != nil {
			t.Fatal(err)
		}
		if len(sgs.groups) != 0 {
			t.Errorf("groups left %v", sgs.groups)
		}
		for id, want := range map[string][]string{"port-a": {"operator-sg"}, "port-b": {"default"}, "port-c": {"default"}, "port-other": {"someone-else"}} {
			if got := sgs.ports[id].SecurityGroups; !slices.Equal(got, want) {
				t.Errorf("%s groups %v, want %v", id, got, want)
			}
		}
		sgs.calls = nil
		if err := m.Delete(context.Background(), "lab", svc); err != nil {
			t.Fatal(err)
		}
		if w := sgs.writes(); len(w) != 0 {
			t.Errorf("a second delete wrote %v", w)
		}
	})
}

func TestSecurityGroupSources(t *testing.T) {
	o := &options{}
	svc := sgService()
	if got := wantedRules(svc, "fd00::/64", o); len(got) != 2 || got[0].Ethertype != "IPv6" || got[0].RemoteIPPrefix != "fd00::/64" {
		t.Errorf("IPv6 member subnet: rules %+v", got)
	}
	o.provider = "ovn"
	var keys []string
	for _, r := range wantedRules(svc, "10.0.0.0/24", o) {
		keys = append(keys, r.Key())
	}
	want := []string{"ingress/IPv4/tcp/30080-30080/0.0.0.0/0", "ingress/IPv4/udp/30053-30053/0.0.0.0/0",
		"ingress/IPv6/tcp/30080-30080/::/0", "ingress/IPv6/udp/30053-30053/::/0"}
	if !slices.Equal(keys, want) {
		t.Errorf("OVN keeps the client address, so the NodePorts open to the source ranges: %v, want %v", keys, want)
	}
	o.allowedCIDRs = []string{"192.0.2.0/24"}
	if got := wantedRules(svc, "10.0.0.0/24", o); len(got) != 2 || got[0].RemoteIPPrefix != "192.0.2.0/24" {
		t.Errorf("OVN with loadBalancerSourceRanges: %+v", got)
	}
}

func TestWithoutManageSecurityGroupsNothingIsTouched(t *testing.T) {
	m, oct, sgs := sgEnv(t)
	m.Config.ManageSecurityGroups = false
	converge(t, m, oct, sgService(), sgNodes("10.0.0.1"))
	if err := m.Delete(context.Background(), "lab", sgService()); err != nil {
		t.Fatal(err)
	}
	if len(sgs.calls) != 0 {
		t.Errorf("calls %v", sgs.calls)
	}
}

// TestALeftOverSecurityGroupKeepsTheServiceDeleting: a sync that deleted
// the load balancer and then failed on the group (real Neutron's 409
// SecurityGroupInUse) must be followed by another delete. k8s.io/
// cloud-provider calls EnsureLoadBalancerDeleted only when GetLoadBalancer
// says something exists, and removes the Service's finalizer otherwise.
func TestALeftOverSecurityGroupKeepsTheServiceDeleting(t *testing.T) {
	ctx := context.Background()
	m, oct, sgs := sgEnv(t)
	svc := sgService()
	converge(t, m, oct, svc, sgNodes("10.0.0.1", "10.0.0.2"))
	oct.mu.Lock()
	if len(oct.lbs) != 1 {
		oct.mu.Unlock()
		t.Fatalf("load balancers %v, want one", oct.lbs)
	}
	for id := range oct.lbs {
		delete(oct.lbs, id) // deleted by the failed sync
	}
	oct.mu.Unlock()

	if _, exists, err := m.Get(ctx, "lab", svc); err != nil || !exists {
		t.Fatalf("Get with the group left: exists %v, %v; want true, so the controller deletes again", exists, err)
	}
	if err := m.Delete(ctx, "lab", svc); err != nil {
		t.Fatal(err)
	}
	if len(sgs.groups) != 0 {
		t.Errorf("groups left after the second delete: %v", sgs.groups)
	}
	if _, exists, err := m.Get(ctx, "lab", svc); err != nil || exists {
		t.Errorf("Get with nothing left: exists %v, %v; want false, so the finalizer goes", exists, err)
	}

	t.Run("another cluster's group of the same name is not this Service's leftover", func(t *testing.T) {
		g, err := sgs.CreateGroup(ctx, SecurityGroupName(svc), "theirs")
		if err != nil {
			t.Fatal(err)
		}
		if err := sgs.AddGroupTag(ctx, g.ID, ClusterTag("another-cluster")); err != nil {
			t.Fatal(err)
		}
		if _, exists, err := m.Get(ctx, "lab", svc); err != nil || exists {
			t.Errorf("Get: exists %v, %v; want false", exists, err)
		}
	})
}

// sgNodes are nodes whose providerIDs name the servers of the sgEnv ports
// holding their addresses.
func sgNodes(ips ...string) []*corev1.Node {
	out := nodes(ips...)
	for i, n := range out {
		n.Spec.ProviderID = "openstack:///" + serverOf(ips[i])
	}
	return out
}

// A node's status addresses are its own word: the group goes on a port only
// when the port is on the server the node's providerID names.
func TestSecurityGroupGoesOnlyOnTheMemberNodesOwnServers(t *testing.T) {
	node := func(name, providerID string, ips ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
		for _, ip := range ips {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
		}
		return n
	}
	const ours = "<ours>"
	tests := []struct {
		name    string
		nodes   []*corev1.Node
		planted []string // ports an older release put our group on
		want    map[string][]string
	}{
		{
			name:  "a node listing an operator VM's address gets that port nothing",
			nodes: []*corev1.Node{sgNodes("10.0.0.1")[0], node("node-x", "openstack:///"+serverOf("10.0.0.2"), "10.0.0.50")},
			want:  map[string][]string{"port-a": {"operator-sg", ours}, "port-b": {"default"}, "port-other": {"someone-else"}},
		},
		{
			name:    "our group an older release put on the operator VM's port is taken off, its other groups kept",
			nodes:   []*corev1.Node{sgNodes("10.0.0.1")[0], node("node-x", "openstack:///"+serverOf("10.0.0.2"), "10.0.0.50")},
			planted: []string{"port-other"},
			want:    map[string][]string{"port-a": {"operator-sg", ours}, "port-b": {"default"}, "port-other": {"someone-else"}},
		},
		{
			name:  "a node without a providerID gets nothing",
			nodes: []*corev1.Node{sgNodes("10.0.0.1")[0], node("node-b", "", "10.0.0.2")},
			want:  map[string][]string{"port-a": {"operator-sg", ours}, "port-b": {"default"}, "port-other": {"someone-else"}},
		},
		{
			name:  "a node with an unparsable providerID gets nothing",
			nodes: []*corev1.Node{sgNodes("10.0.0.1")[0], node("node-b", "aws:///"+serverOf("10.0.0.2"), "10.0.0.2")},
			want:  map[string][]string{"port-a": {"operator-sg", ours}, "port-b": {"default"}, "port-other": {"someone-else"}},
		},
		{
			name:  "a providerID with a region names the server too",
			nodes: []*corev1.Node{sgNodes("10.0.0.1")[0], node("node-b", "openstack://RegionOne/"+serverOf("10.0.0.2"), "10.0.0.2")},
			want:  map[string][]string{"port-a": {"operator-sg", ours}, "port-b": {"default", ours}, "port-other": {"someone-else"}},
		},
		{
			name:  "a node listing another node's address does not take that node's port from it",
			nodes: []*corev1.Node{node("node-x", "openstack:///"+serverOf("10.0.0.2"), "10.0.0.1"), sgNodes("10.0.0.1")[0]},
			want:  map[string][]string{"port-a": {"operator-sg", ours}, "port-b": {"default"}, "port-other": {"someone-else"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, oct, sgs := sgEnv(t)
			svc := sgService()
			converge(t, m, oct, svc, sgNodes("10.0.0.1"))
			g := sgs.only(t)
			for _, id := range tc.planted {
				sgs.ports[id].SecurityGroups = append(sgs.ports[id].SecurityGroups, g.ID)
			}
			converge(t, m, oct, svc, tc.nodes)
			for id, want := range tc.want {
				want = slices.Clone(want)
				if i := slices.Index(want, ours); i >= 0 {
					want[i] = g.ID
				}
				if got := sgs.ports[id].SecurityGroups; !slices.Equal(got, want) {
					t.Errorf("%s groups %v, want %v", id, got, want)
				}
			}
		})
	}
}
