package provider

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stackward/stackward/pkg/openstack"
	"github.com/stackward/stackward/pkg/routes"
)

// Routes: Cloud alone has none; WithServices serves the [Route] router's.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return nil, false }

// nodeRoutes is cloudprovider.Routes over pkg/routes: the route
// controller thinks in nodes, Neutron in next-hop addresses.
//
// Only this cluster's routes (pkg/routes' ledger) are reported: the route
// controller deletes every reported route inside the cluster CIDR that no
// Node claims, and a router shared with another cluster carries that
// cluster's routes, very likely inside the same default CIDR. A route of
// ours whose next hop is no Node's address is reported without a target
// node, which the route controller deletes: that is how a deleted node's
// route goes. A record whose route is not on the router (an add that
// failed) is reported the same way when no Node has its next hop, so that
// its address pair is cleaned up too.
type nodeRoutes struct {
	r     *routes.Routes
	nodes func(ctx context.Context) ([]corev1.Node, error)
}

var _ cloudprovider.Routes = (*nodeRoutes)(nil)

func (n *nodeRoutes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	owned, err := n.r.List(ctx)
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
	out := make([]*cloudprovider.Route, 0, len(owned))
	for _, o := range owned {
		target := byIP[o.NextHop]
		if !o.OnRouter && target != "" {
			continue // the route controller adds it again for that node
		}
		out = append(out, &cloudprovider.Route{
			Name:                o.Destination + " via " + o.NextHop,
			TargetNode:          types.NodeName(target),
			TargetNodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: o.NextHop}},
			DestinationCIDR:     o.Destination,
		})
	}
	return out, nil
}

func (n *nodeRoutes) CreateRoute(ctx context.Context, _ string, _ string, route *cloudprovider.Route) error {
	hop := nextHop(route)
	if hop == "" {
		return fmt.Errorf("route %s for node %s: the node has no InternalIP of the CIDR's family", route.DestinationCIDR, route.TargetNode)
	}
	serverID, err := n.serverOf(ctx, string(route.TargetNode))
	if err != nil {
		return fmt.Errorf("route %s for node %s: %w", route.DestinationCIDR, route.TargetNode, err)
	}
	return n.r.Add(ctx, routes.Route{Destination: route.DestinationCIDR, NextHop: hop}, string(route.TargetNode), serverID)
}

// serverOf is the server of an initialized Node (its providerID, which the
// CCM itself wrote after checking the node's name against the server's).
func (n *nodeRoutes) serverOf(ctx context.Context, name string) (string, error) {
	nodes, err := n.nodes(ctx)
	if err != nil {
		return "", err
	}
	for _, node := range nodes {
		if node.Name != name {
			continue
		}
		if node.Spec.ProviderID == "" || uninitialized(&node) {
			// The kubelet may write any providerID; only once the CCM has
			// checked the node's name against the server's is it trusted.
			return "", fmt.Errorf("node %s is not initialized by the CCM yet", name)
		}
		_, id, err := openstack.ParseProviderID(node.Spec.ProviderID)
		return id, err
	}
	return "", fmt.Errorf("node %s not found", name)
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

func uninitialized(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == cloudproviderapi.TaintExternalCloudProvider {
			return true
		}
	}
	return false
}
