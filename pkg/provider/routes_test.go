package provider

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stackward/stackward/pkg/openstack"
	"github.com/stackward/stackward/pkg/routes"
)

// routerFake is a router with atomic extra routes and one port per server.
type routerFake struct {
	routes []routes.Route
	ports  map[string]*routes.Port // by ID
}

func (f *routerFake) Extensions(context.Context) ([]string, error) {
	return []string{"extraroute", "extraroute-atomic"}, nil
}
func (f *routerFake) RouterRoutes(context.Context, string) ([]routes.Route, int, error) {
	return slices.Clone(f.routes), 1, nil
}
func (f *routerFake) AddRoutes(_ context.Context, _ string, rs []routes.Route) error {
	f.routes = append(f.routes, rs...)
	return nil
}
func (f *routerFake) RemoveRoutes(_ context.Context, _ string, rs []routes.Route) error {
	f.routes = slices.DeleteFunc(f.routes, func(r routes.Route) bool { return slices.Contains(rs, r) })
	return nil
}
func (f *routerFake) SetRoutes(_ context.Context, _ string, rs []routes.Route, _ int) error {
	f.routes = rs
	return nil
}
func (f *routerFake) ListPorts(_ context.Context, id string) ([]routes.Port, error) {
	var out []routes.Port
	for _, p := range f.ports {
		if p.DeviceID == id {
			out = append(out, *p)
		}
	}
	return out, nil
}
func (f *routerFake) Port(_ context.Context, id string) (*routes.Port, error) {
	p, ok := f.ports[id]
	if !ok {
		return nil, fmt.Errorf("port %s: %w", id, openstack.ErrNotFound)
	}
	cp := *p
	cp.AllowedAddressPairs = slices.Clone(p.AllowedAddressPairs)
	return &cp, nil
}
func (f *routerFake) SetAllowedAddressPairs(_ context.Context, id string, pairs []routes.Pair, _ int) error {
	f.ports[id].AllowedAddressPairs = pairs
	return nil
}

func TestNodeRoutes(t *testing.T) {
	ctx := context.Background()
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
	node := func(name, ip, server string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "openstack:///" + server},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
	}
	nodes := []corev1.Node{node("a", "10.0.0.5", "srv-a"), node("b", "10.0.0.6", "srv-b")}
	nr := &nodeRoutes{r: r, nodes: func(context.Context) ([]corev1.Node, error) { return nodes, nil }}
	// Another cluster's route on the shared router, in the same CIDR, to
	// an address none of our Nodes has.
	theirs := routes.Route{Destination: "198.19.131.0/24", NextHop: "10.0.0.9"}
	fake.routes = []routes.Route{theirs}

	t.Run("a route is created via the node's InternalIP of the CIDR's family, with its address pair on the node's server's port", func(t *testing.T) {
		err := nr.CreateRoute(ctx, "lab", "uid", &cloudprovider.Route{TargetNode: "a", DestinationCIDR: "198.19.130.0/24",
			TargetNodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "fd00::5"}, {Type: corev1.NodeInternalIP, Address: "10.0.0.5"}}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(fake.routes, routes.Route{Destination: "198.19.130.0/24", NextHop: "10.0.0.5"}) ||
			!slices.Equal(fake.ports["p5"].AllowedAddressPairs, []routes.Pair{{IPAddress: "198.19.130.0/24", MACAddress: "m5"}}) {
			t.Errorf("routes %v pairs %v", fake.routes, fake.ports["p5"].AllowedAddressPairs)
		}
	})
	t.Run("only our routes are listed: another cluster's route is not, so the controller cannot delete it", func(t *testing.T) {
		got, err := nr.ListRoutes(ctx, "lab")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].TargetNode != "a" {
			t.Fatalf("routes %+v", got)
		}
	})
	t.Run("our route to a node that is gone has no target, and deleting it leaves the other cluster's route", func(t *testing.T) {
		nodes = nodes[1:]
		got, err := nr.ListRoutes(ctx, "lab")
		if err != nil || len(got) != 1 || got[0].TargetNode != "" {
			t.Fatalf("routes %+v, %v", got, err)
		}
		if err := nr.DeleteRoute(ctx, "lab", got[0]); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fake.routes, []routes.Route{theirs}) || len(fake.ports["p5"].AllowedAddressPairs) != 0 {
			t.Errorf("left: routes %v pairs %v", fake.routes, fake.ports["p5"].AllowedAddressPairs)
		}
	})
	t.Run("a node without an address of the CIDR's family is an error, not a guess", func(t *testing.T) {
		err := nr.CreateRoute(ctx, "lab", "uid", &cloudprovider.Route{TargetNode: "b", DestinationCIDR: "fd00:10::/64",
			TargetNodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.6"}}})
		if err == nil {
			t.Error("route created")
		}
	})
	t.Run("a node the CCM has not initialized gets no route, whatever providerID its kubelet wrote", func(t *testing.T) {
		n := node("d", "10.0.0.6", "srv-b")
		n.Spec.Taints = []corev1.Taint{{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: corev1.TaintEffectNoSchedule}}
		nodes = append(nodes, n)
		err := nr.CreateRoute(ctx, "lab", "uid", &cloudprovider.Route{TargetNode: "d", DestinationCIDR: "198.19.133.0/24",
			TargetNodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.6"}}})
		if err == nil || len(fake.routes) != 1 || len(fake.ports["p6"].AllowedAddressPairs) != 0 {
			t.Errorf("err %v routes %v pairs %v", err, fake.routes, fake.ports["p6"].AllowedAddressPairs)
		}
	})
	t.Run("a node without a providerID gets no route", func(t *testing.T) {
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "c"}})
		err := nr.CreateRoute(ctx, "lab", "uid", &cloudprovider.Route{TargetNode: "c", DestinationCIDR: "198.19.132.0/24",
			TargetNodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}}})
		if err == nil || len(fake.routes) != 1 {
			t.Errorf("err %v routes %v", err, fake.routes)
		}
	})
}
