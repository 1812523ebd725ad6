package provider

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stackward/stackward/pkg/routes"
)

// routerFake is a router with atomic extra routes and node ports.
type routerFake struct {
	routes []routes.Route
	pairs  map[string][]string // port IP -> pairs
}

func (f *routerFake) Extensions(context.Context) ([]string, error) {
	return []string{"extraroute", "extraroute-atomic"}, nil
}
func (f *routerFake) RouterRoutes(context.Context, string) ([]routes.Route, error) {
	return slices.Clone(f.routes), nil
}
func (f *routerFake) AddRoutes(_ context.Context, _ string, rs []routes.Route) error {
	f.routes = append(f.routes, rs...)
	return nil
}
func (f *routerFake) RemoveRoutes(_ context.Context, _ string, rs []routes.Route) error {
	f.routes = slices.DeleteFunc(f.routes, func(r routes.Route) bool { return slices.Contains(rs, r) })
	return nil
}
func (f *routerFake) SetRoutes(_ context.Context, _ string, rs []routes.Route) error {
	f.routes = rs
	return nil
}
func (f *routerFake) PortByIP(_ context.Context, ip string) (*routes.Port, error) {
	p, ok := f.pairs[ip]
	if !ok {
		return nil, routes.ErrNoPort
	}
	return &routes.Port{ID: ip, AllowedAddressPairs: slices.Clone(p)}, nil
}
func (f *routerFake) SetAllowedAddressPairs(_ context.Context, id string, pairs []string) error {
	f.pairs[id] = pairs
	return nil
}

func TestNodeRoutes(t *testing.T) {
	ctx := context.Background()
	fake := &routerFake{pairs: map[string][]string{"10.0.0.5": nil, "10.0.0.6": nil}}
	r, err := routes.NewWithNeutron(ctx, fake, "router-1")
	if err != nil {
		t.Fatal(err)
	}
	node := func(name, ip string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
	}
	nodes := []corev1.Node{node("a", "10.0.0.5"), node("b", "10.0.0.6")}
	nr := &nodeRoutes{r: r, nodes: func(context.Context) ([]corev1.Node, error) { return nodes, nil }}

	t.Run("a route is created via the node's InternalIP of the CIDR's family, with its address pair", func(t *testing.T) {
		err := nr.CreateRoute(ctx, "lab", "uid", &cloudprovider.Route{TargetNode: "a", DestinationCIDR: "198.19.130.0/24",
			TargetNodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "fd00::5"}, {Type: corev1.NodeInternalIP, Address: "10.0.0.5"}}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fake.routes, []routes.Route{{Destination: "198.19.130.0/24", NextHop: "10.0.0.5"}}) || !slices.Equal(fake.pairs["10.0.0.5"], []string{"198.19.130.0/24"}) {
			t.Errorf("routes %v pairs %v", fake.routes, fake.pairs)
		}
	})
	t.Run("listed routes name their node; a route to no node has none, so the controller deletes it", func(t *testing.T) {
		fake.routes = append(fake.routes, routes.Route{Destination: "198.19.131.0/24", NextHop: "10.0.0.9"})
		got, err := nr.ListRoutes(ctx, "lab")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].TargetNode != "a" || got[1].TargetNode != "" {
			t.Fatalf("routes %+v", got)
		}
		if err := nr.DeleteRoute(ctx, "lab", got[1]); err != nil {
			t.Fatal(err)
		}
		if err := nr.DeleteRoute(ctx, "lab", got[0]); err != nil {
			t.Fatal(err)
		}
		if len(fake.routes) != 0 || len(fake.pairs["10.0.0.5"]) != 0 {
			t.Errorf("left: routes %v pairs %v", fake.routes, fake.pairs)
		}
	})
	t.Run("a node without an address of the CIDR's family is an error, not a guess", func(t *testing.T) {
		err := nr.CreateRoute(ctx, "lab", "uid", &cloudprovider.Route{TargetNode: "b", DestinationCIDR: "fd00:10::/64",
			TargetNodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.6"}}})
		if err == nil {
			t.Error("route created")
		}
	})
}
