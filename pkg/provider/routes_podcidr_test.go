package provider

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stackward/stackward/pkg/openstack"
	"github.com/stackward/stackward/pkg/routes"
)

// TestRoutesTrustOnlyTheCloud: a node that lies in its own Node object
// (another node's IP in its status, a crafted pod CIDR) changes no other
// node's route and gets nothing written to Neutron for the lie.
func TestRoutesTrustOnlyTheCloud(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	node := func(name, server string, registered time.Duration, podCIDR string, ips ...string) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(base.Add(registered))},
			Spec: corev1.NodeSpec{ProviderID: "openstack:///" + server}}
		if podCIDR != "" {
			n.Spec.PodCIDR, n.Spec.PodCIDRs = podCIDR, []string{podCIDR}
		}
		for _, ip := range ips {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
		}
		return n
	}
	setup := func(t *testing.T, nodes []corev1.Node) (*nodeRoutes, *routerFake, *record.FakeRecorder) {
		t.Helper()
		fake := &routerFake{ports: map[string]*routes.Port{
			"p5": {ID: "p5", DeviceID: "srv-a", MACAddress: "m5", FixedIPs: []openstack.FixedIP{{IPAddress: "10.0.0.5"}}},
			"p6": {ID: "p6", DeviceID: "srv-b", MACAddress: "m6", FixedIPs: []openstack.FixedIP{{IPAddress: "10.0.0.6"}}},
		}}
		kube := kubefake.NewClientset()
		ledger := &routes.ConfigMapLedger{Client: func() (kubernetes.Interface, error) { return kube, nil }, Namespace: "kube-system", Name: routes.DefaultLedgerName}
		r, err := routes.NewWithNeutron(ctx, fake, ledger, "router-1")
		if err != nil {
			t.Fatal(err)
		}
		rec := record.NewFakeRecorder(10)
		policy, err := routes.NewPodCIDRPolicy("198.19.128.0/17", routes.NodeCIDRMaskSizes{})
		if err != nil {
			t.Fatal(err)
		}
		nr := &nodeRoutes{r: r, nodes: func(context.Context) ([]corev1.Node, error) { return nodes, nil },
			cidrs:  policy,
			events: func() record.EventRecorder { return rec }}
		return nr, fake, rec
	}
	create := func(nr *nodeRoutes, node, cidr string, ips ...string) error {
		route := &cloudprovider.Route{TargetNode: types.NodeName(node), DestinationCIDR: cidr}
		for _, ip := range ips {
			route.TargetNodeAddresses = append(route.TargetNodeAddresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
		}
		return nr.CreateRoute(ctx, "lab", "uid", route)
	}

	t.Run("a node claiming another node's IP in its status does not take that node's route", func(t *testing.T) {
		nodes := []corev1.Node{node("a", "srv-a", 0, "198.19.130.0/24", "10.0.0.5"), node("b", "srv-b", time.Minute, "198.19.131.0/24", "10.0.0.6", "10.0.0.5")}
		nr, _, _ := setup(t, nodes)
		if err := create(nr, "a", "198.19.130.0/24", "10.0.0.5"); err != nil {
			t.Fatal(err)
		}
		got, err := nr.ListRoutes(ctx, "lab")
		if err != nil || len(got) != 1 || got[0].TargetNode != "a" {
			t.Fatalf("routes %+v, %v; want a's route still a's", got, err)
		}
	})
	t.Run("a node listing another node's IP first gets its route through its own port's address", func(t *testing.T) {
		nodes := []corev1.Node{node("a", "srv-a", 0, "198.19.130.0/24", "10.0.0.5"), node("b", "srv-b", time.Minute, "198.19.131.0/24", "10.0.0.5", "10.0.0.6")}
		nr, fake, _ := setup(t, nodes)
		if err := create(nr, "b", "198.19.131.0/24", "10.0.0.5", "10.0.0.6"); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fake.routes, []routes.Route{{Destination: "198.19.131.0/24", NextHop: "10.0.0.6"}}) || len(fake.ports["p5"].AllowedAddressPairs) != 0 {
			t.Errorf("routes %v, a's port pairs %v; want b's route via its own 10.0.0.6 and a's port untouched", fake.routes, fake.ports["p5"].AllowedAddressPairs)
		}
	})
	for _, tt := range []struct {
		name, cidr, inEvent string
	}{
		{"the whole IPv4 space as a pod CIDR is refused", "0.0.0.0/0", "wider than a node's /24"},
		{"a pod CIDR outside --cluster-cidr is refused", "10.244.1.0/24", "outside --cluster-cidr 198.19.128.0/17"},
		{"a pod CIDR wider than the node mask is refused", "198.19.128.0/20", "wider than a node's /24"},
		{"another node's pod CIDR is refused to the later node", "198.19.130.0/24", "overlaps 198.19.130.0/24 of node a"},
		{"a pod CIDR inside another node's is refused", "198.19.130.128/25", "overlaps 198.19.130.0/24 of node a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nodes := []corev1.Node{node("a", "srv-a", 0, "198.19.130.0/24", "10.0.0.5"), node("b", "srv-b", time.Minute, tt.cidr, "10.0.0.6")}
			nr, fake, rec := setup(t, nodes)
			if err := create(nr, "b", tt.cidr, "10.0.0.6"); err == nil || !strings.Contains(err.Error(), "refused") {
				t.Fatalf("CreateRoute: %v; want refused", err)
			}
			if len(fake.routes) != 0 || len(fake.ports["p6"].AllowedAddressPairs) != 0 {
				t.Errorf("written to Neutron: routes %v pairs %v", fake.routes, fake.ports["p6"].AllowedAddressPairs)
			}
			select {
			case e := <-rec.Events:
				if !strings.Contains(e, "Warning "+reasonPodCIDRRefused) || !strings.Contains(e, tt.inEvent) {
					t.Errorf("event %q; want a %s warning saying %q", e, reasonPodCIDRRefused, tt.inEvent)
				}
			default:
				t.Error("no Event")
			}
		})
	}
	t.Run("the earlier node keeps its pod CIDR when a later one claims it", func(t *testing.T) {
		nodes := []corev1.Node{node("a", "srv-a", 0, "198.19.130.0/24", "10.0.0.5"), node("b", "srv-b", time.Minute, "198.19.130.0/24", "10.0.0.6")}
		nr, fake, _ := setup(t, nodes)
		if err := create(nr, "a", "198.19.130.0/24", "10.0.0.5"); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fake.routes, []routes.Route{{Destination: "198.19.130.0/24", NextHop: "10.0.0.5"}}) {
			t.Errorf("routes %v", fake.routes)
		}
	})
}

// TestNodeCIDRMaskSizes: the CCM takes kube-controller-manager's
// --node-cidr-mask-size flags; a pod CIDR wider than its family's mask is
// refused, one as wide is routed, and flags that cannot describe the
// cluster stop the CCM at startup.
func TestNodeCIDRMaskSizes(t *testing.T) {
	a := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	tests := []struct {
		name        string
		clusterCIDR string
		masks       routes.NodeCIDRMaskSizes
		refused     map[string]string // pod CIDR → part of the refusal
		routed      []string
		wantErr     string
	}{{
		name: "without the flags a node's share is /24 and /64", clusterCIDR: "10.0.0.0/8,fd00::/48",
		refused: map[string]string{"10.1.0.0/23": "wider than a node's /24", "fd00:0:0:2::/63": "wider than a node's /64"},
		routed:  []string{"10.1.0.0/24", "fd00:0:0:1::/64"},
	}, {
		name: "--node-cidr-mask-size 26 refuses a /24 of a single-stack IPv4 cluster", clusterCIDR: "10.0.0.0/8", masks: routes.NodeCIDRMaskSizes{Any: 26},
		refused: map[string]string{"10.1.0.0/24": "wider than a node's /26"},
		routed:  []string{"10.1.0.0/26", "10.1.0.64/27"},
	}, {
		name: "--node-cidr-mask-size 16 routes a /16 of a single-stack IPv4 cluster", clusterCIDR: "10.0.0.0/8", masks: routes.NodeCIDRMaskSizes{Any: 16},
		refused: map[string]string{"10.0.0.0/15": "wider than a node's /16"},
		routed:  []string{"10.1.0.0/16"},
	}, {
		name: "--node-cidr-mask-size 80 is the IPv6 size of a single-stack IPv6 cluster", clusterCIDR: "fd00::/48", masks: routes.NodeCIDRMaskSizes{Any: 80},
		refused: map[string]string{"fd00:0:0:1::/64": "wider than a node's /80"},
		routed:  []string{"fd00:0:0:1::/80"},
	}, {
		name: "the -ipv4 and -ipv6 sizes apply to a dual-stack cluster", clusterCIDR: "10.0.0.0/8,fd00::/48", masks: routes.NodeCIDRMaskSizes{IPv4: 20, IPv6: 96},
		refused: map[string]string{"10.0.0.0/19": "wider than a node's /20", "fd00:0:0:1::/64": "wider than a node's /96"},
		routed:  []string{"10.0.16.0/20", "fd00:0:0:1::/96"},
	}, {
		name: "--node-cidr-mask-size with a dual-stack cluster is an error", clusterCIDR: "10.0.0.0/8,fd00::/48", masks: routes.NodeCIDRMaskSizes{Any: 24},
		wantErr: "--node-cidr-mask-size is for a single-stack --cluster-cidr",
	}, {
		name: "a node mask wider than the cluster CIDR is an error", clusterCIDR: "10.0.0.0/16", masks: routes.NodeCIDRMaskSizes{IPv4: 12},
		wantErr: "node CIDR mask size /12 (--node-cidr-mask-size-ipv4 or --node-cidr-mask-size) is wider than --cluster-cidr 10.0.0.0/16",
	}, {
		name: "an IPv4 mask size over 32 is an error", masks: routes.NodeCIDRMaskSizes{IPv4: 33},
		wantErr: "--node-cidr-mask-size-ipv4 33: want 1 to 32",
	}, {
		name: "--node-cidr-mask-size over 32 with an IPv4 cluster is an error", clusterCIDR: "10.0.0.0/8", masks: routes.NodeCIDRMaskSizes{Any: 40},
		wantErr: "--node-cidr-mask-size 40: an IPv4 --cluster-cidr takes 1 to 32",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &WithServices{nodeMasks: tt.masks}
			err := w.SetClusterCIDRs(tt.clusterCIDR)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v; want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for cidr, why := range tt.refused {
				if got := w.podCIDRs.Refuse("a", cidr, []corev1.Node{a}); !strings.Contains(got, why) {
					t.Errorf("pod CIDR %s: refusal %q; want one saying %q", cidr, got, why)
				}
			}
			for _, cidr := range tt.routed {
				if got := w.podCIDRs.Refuse("a", cidr, []corev1.Node{a}); got != "" {
					t.Errorf("pod CIDR %s refused: %s", cidr, got)
				}
			}
		})
	}
}
