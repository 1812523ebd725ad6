package loadbalancer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/config"
)

func (n *fakeNeutron) Subnets(_ context.Context, networkID string, f TagFilter) ([]Subnet, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, "list_subnets")
	var out []Subnet
	for _, s := range n.floatingSubnets {
		all, anyOf := true, false
		for _, t := range f.Tags {
			if slices.Contains(s.Tags, t) {
				anyOf = true
			} else {
				all = false
			}
		}
		keep := len(f.Tags) == 0 || (f.All && all) || (!f.All && anyOf)
		if len(f.Tags) > 0 && f.Negate {
			keep = !((f.All && all) || (!f.All && anyOf))
		}
		if keep {
			out = append(out, s)
		}
	}
	return out, nil
}

func withFloatingSubnets(net *fakeNeutron) *fakeNeutron {
	net.floatingSubnets = []Subnet{
		{ID: "s-pub-1", Name: "public-v4-1", Tags: []string{"public", "v4"}},
		{ID: "s-pub-2", Name: "public-v4-2", Tags: []string{"public", "v4"}},
		{ID: "s-dmz", Name: "dmz-7", Tags: []string{"dmz"}},
	}
	return net
}

func allocatedSubnet(t *testing.T, net *fakeNeutron) string {
	t.Helper()
	if len(net.fips) != 1 {
		t.Fatalf("floating IPs %v, want one", net.fips)
	}
	for _, f := range net.fips {
		return f.SubnetID
	}
	return ""
}

func TestTheFloatingSubnetIsChosenAsUpstreamDoes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		cfg         func(*config.LoadBalancer)
		want        string
	}{
		{"by name", map[string]string{AnnotationFloatingSubnet: "dmz-7"}, nil, "s-dmz"},
		{"by glob, the first that matches", map[string]string{AnnotationFloatingSubnet: "public-*"}, nil, "s-pub-1"},
		{"by regexp", map[string]string{AnnotationFloatingSubnet: "~dmz-[0-9]+"}, nil, "s-dmz"},
		{"negated", map[string]string{AnnotationFloatingSubnet: "!public-*"}, nil, "s-dmz"},
		{"by any tag", map[string]string{AnnotationFloatingSubnetTags: "dmz,other"}, nil, "s-dmz"},
		{"by all tags", map[string]string{AnnotationFloatingSubnetTags: "&public,v4"}, nil, "s-pub-1"},
		{"by no tag", map[string]string{AnnotationFloatingSubnetTags: "!public"}, nil, "s-dmz"},
		{"the config's pattern is the default", nil, func(c *config.LoadBalancer) { c.FloatingSubnet = "dmz-*" }, "s-dmz"},
		{"the annotation's ID wins over a pattern", map[string]string{AnnotationFloatingSubnetID: "s-pub-2", AnnotationFloatingSubnet: "dmz-7"}, nil, "s-pub-2"},
		{"a class wins over the annotations", map[string]string{AnnotationClass: "dmz", AnnotationFloatingSubnetID: "s-pub-2"},
			func(c *config.LoadBalancer) {
				c.Classes = map[string]*config.LBClass{"dmz": {FloatingSubnetTags: "dmz"}}
			}, "s-dmz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oct, net := newFakeOctavia(), withFloatingSubnets(newFakeNeutron())
			m := newManager(oct, net)
			if tc.cfg != nil {
				tc.cfg(&m.Config)
			}
			svc := service(func(s *corev1.Service) {
				for k, v := range tc.annotations {
					s.Annotations[k] = v
				}
			})
			converge(t, m, oct, svc, nodes("10.0.0.1"))
			if got := allocatedSubnet(t, net); got != tc.want {
				t.Errorf("floating IP on %s, want %s", got, tc.want)
			}
		})
	}
}

func TestNoMatchingFloatingSubnetSaysWhat(t *testing.T) {
	oct, net := newFakeOctavia(), withFloatingSubnets(newFakeNeutron())
	m := newManager(oct, net)
	svc := service(func(s *corev1.Service) { s.Annotations[AnnotationFloatingSubnet] = "office-*" })
	var err error
	for range 3 {
		if _, err = m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1")); err != nil && !isRetry(err) {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), `floating-subnet "office-*"`) {
		t.Errorf("Ensure: %v, want it to name the pattern", err)
	}
}

func TestAClassSuppliesTheNetworksTheServiceDoesNotSet(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	m.Config.FloatingNetworkID = "public"
	m.Config.Classes = map[string]*config.LBClass{"office": {FloatingNetworkID: "office-net", SubnetID: "vip-sub", MemberSubnetID: "member-sub"}}
	svc := service(func(s *corev1.Service) {
		s.Annotations[AnnotationClass] = "office"
		s.Annotations[AnnotationFloatingNetworkID] = "public"
		s.Annotations[AnnotationMemberSubnetID] = "mine"
	})
	converge(t, m, oct, svc, nodes("10.0.0.1"))
	lb := oct.only()
	if lb.lb.VIPSubnetID != "vip-sub" {
		t.Errorf("VIP subnet %s, want the class's", lb.lb.VIPSubnetID)
	}
	for _, f := range net.fips {
		if f.NetworkID != "office-net" {
			t.Errorf("floating IP on network %s, want the class's (it wins over the annotation)", f.NetworkID)
		}
	}
	for _, p := range lb.tree.Pools {
		for _, mem := range p.Members {
			if mem.SubnetID != "mine" {
				t.Errorf("member subnet %s, want the annotation's (it wins over the class)", mem.SubnetID)
			}
		}
	}
}

func TestInvalidClassAndPatternAreEventsAndNoCall(t *testing.T) {
	for _, tc := range []struct{ annotation, value string }{
		{AnnotationClass, "nosuch"},
		{AnnotationFloatingSubnet, "~public-[0-9"},
	} {
		oct, net := newFakeOctavia(), newFakeNeutron()
		m := newManager(oct, net)
		m.Config.Classes = map[string]*config.LBClass{"office": {SubnetID: "x"}}
		svc := service(func(s *corev1.Service) { s.Annotations[tc.annotation] = tc.value })
		_, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
		if err == nil || !strings.Contains(err.Error(), tc.annotation) || !strings.Contains(err.Error(), tc.value) {
			t.Errorf("Ensure: %v, want it to name %s=%s", err, tc.annotation, tc.value)
		}
		if len(oct.calls)+len(net.calls) != 0 {
			t.Errorf("cloud calls %v %v", oct.calls, net.calls)
		}
	}
}

func TestPortIDIsTheVIPAndIsNeverChangedInPlace(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	net.ports = map[string]*Port{"port-mine": {ID: "port-mine"}}
	svc := service(func(s *corev1.Service) { s.Annotations[AnnotationPortID] = "port-mine" })
	st := converge(t, m, oct, svc, nodes("10.0.0.1"))
	if oct.only().lb.VIPPortID != "port-mine" {
		t.Errorf("VIP port %s, want port-mine", oct.only().lb.VIPPortID)
	}
	for _, c := range net.calls {
		if c == "list_ports" {
			t.Error("the VIP subnet was looked up although the port gives it")
		}
	}
	for _, f := range net.fips {
		if f.PortID != "port-mine" || st.Ingress[0].IP != f.Address {
			t.Errorf("floating IP %+v, ingress %v", f, st.Ingress)
		}
	}
	oct.resetCalls()
	svc.Annotations[AnnotationPortID] = "port-other"
	_, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
	if !errors.Is(err, ErrImmutable) || !strings.Contains(err.Error(), AnnotationPortID) || len(oct.writes()) != 0 {
		t.Errorf("Ensure: %v, writes %v; want a refusal naming %s", err, oct.writes(), AnnotationPortID)
	}
}

func TestInternalLBInTheConfigAllowsOnlyInternalLoadBalancers(t *testing.T) {
	for _, annotation := range []string{"", "false", "true"} {
		oct, net := newFakeOctavia(), newFakeNeutron()
		m := newManager(oct, net)
		m.Config.InternalLB = true
		svc := service(func(s *corev1.Service) {
			if annotation != "" {
				s.Annotations[AnnotationInternal] = annotation
			}
		})
		st := converge(t, m, oct, svc, nodes("10.0.0.1"))
		if len(net.fips) != 0 || st.Ingress[0].IP != "10.0.0.100" {
			t.Errorf("annotation %q: floating IPs %v, ingress %v; want the VIP only", annotation, net.fips, st.Ingress)
		}
	}
}
