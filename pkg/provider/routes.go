package provider

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stackward/stackward/pkg/routes"
)

// Routes: Cloud alone has none; WithServices serves the [Route] router's.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return nil, false }

// nodeRoutes is cloudprovider.Routes over pkg/routes: the route
// controller thinks in nodes, Neutron in next-hop addresses. A route whose
// next hop is no Node's address is reported without a target node, which
// the route controller deletes (within the cluster CIDR only): that is how
// a deleted node's route goes.
type nodeRoutes struct {
	r     *routes.Routes
	nodes func(ctx context.Context) ([]corev1.Node, error)
}

var _ cloudprovider.Routes = (*nodeRoutes)(nil)

func (n *nodeRoutes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	list, err := n.r.List(ctx)
	if err != nil {
		return nil, err
	}
	nodes, err := n.nodes(ctx)
	if err != nil {
		return nil, err
	}
	byIP := map[string]string{}
	for _, node := range nodes {
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				byIP[a.Address] = node.Name
			}
		}
	}
	out := make([]*cloudprovider.Route, 0, len(list))
	for _, r := range list {
		out = append(out, &cloudprovider.Route{
			Name:                r.Destination + " via " + r.NextHop,
			TargetNode:          types.NodeName(byIP[r.NextHop]),
			TargetNodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: r.NextHop}},
			DestinationCIDR:     r.Destination,
		})
	}
	return out, nil
}

func (n *nodeRoutes) CreateRoute(ctx context.Context, _ string, _ string, route *cloudprovider.Route) error {
	hop := nextHop(route)
	if hop == "" {
		return fmt.Errorf("route %s for node %s: the node has no InternalIP of the CIDR's family", route.DestinationCIDR, route.TargetNode)
	}
	return n.r.Add(ctx, routes.Route{Destination: route.DestinationCIDR, NextHop: hop})
}

func (n *nodeRoutes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	hop := nextHop(route)
	if hop == "" {
		return fmt.Errorf("route %s: no next hop address", route.DestinationCIDR)
	}
	return n.r.Remove(ctx, routes.Route{Destination: route.DestinationCIDR, NextHop: hop})
}

// nextHop is the route's node InternalIP of the destination's family.
func nextHop(route *cloudprovider.Route) string {
	v6 := strings.Contains(route.DestinationCIDR, ":")
	for _, a := range route.TargetNodeAddresses {
		if a.Type == corev1.NodeInternalIP && strings.Contains(a.Address, ":") == v6 {
			return a.Address
		}
	}
	return ""
}
