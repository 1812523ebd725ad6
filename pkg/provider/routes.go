package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/openstack"
	"github.com/stackward/stackward/pkg/routes"
)

// Routes: Cloud alone has none; WithServices serves the [Route] router's.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return nil, false }

// reasonPodCIDRRefused is the Event reason of a pod CIDR that
// routes.PodCIDRPolicy refused.
const reasonPodCIDRRefused = "PodCIDRRefused"

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
//
// A route is its record's node's while that Node's providerID (which the
// CCM checked) names the record's server, whose port held the next hop when
// the route was made (routes.Add checks it), and the node still reports
// that address (routes.Record.OwnedBy).
type nodeRoutes struct {
	r     *routes.Routes
	nodes func(ctx context.Context) ([]corev1.Node, error)
	// cidrs checks each pod CIDR before anything is written.
	cidrs routes.PodCIDRPolicy
	// events returns the recorder for refusals (nil: none yet).
	events func() record.EventRecorder
	// adoptUpstream is [Route] adopt-upstream-routes (routeadopt.go).
	adoptUpstream bool
	memo          *adoptMemo
}

var _ cloudprovider.Routes = (*nodeRoutes)(nil)

func (n *nodeRoutes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	owned, others, err := n.r.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	nodes, err := n.nodes(ctx)
	if err != nil {
		return nil, err
	}
	if n.adoptUpstream && len(others) > 0 {
		adopted, err := n.adopt(ctx, nodes, owned, others)
		if err != nil {
			return nil, err
		}
		if adopted {
			if owned, err = n.r.List(ctx); err != nil {
				return nil, err
			}
		}
	}
	byName := make(map[string]*corev1.Node, len(nodes))
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	out := make([]*cloudprovider.Route, 0, len(owned))
	for _, o := range owned {
		target := ""
		if node := byName[o.Node]; node != nil && o.OwnedBy(node) {
			target = o.Node
		}
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
	nodes, err := n.nodes(ctx)
	if err != nil {
		return fmt.Errorf("route %s for node %s: %w", route.DestinationCIDR, route.TargetNode, err)
	}
	if why := n.cidrs.Refuse(string(route.TargetNode), route.DestinationCIDR, nodes); why != "" {
		n.refused(ctx, nodes, string(route.TargetNode), why)
		return fmt.Errorf("route %s for node %s refused: %s", route.DestinationCIDR, route.TargetNode, why)
	}
	hops := nextHops(route)
	if len(hops) == 0 {
		return fmt.Errorf("route %s for node %s: the node has no InternalIP of the CIDR's family", route.DestinationCIDR, route.TargetNode)
	}
	serverID, err := n.serverOf(ctx, string(route.TargetNode))
	if err != nil {
		return fmt.Errorf("route %s for node %s: %w", route.DestinationCIDR, route.TargetNode, err)
	}
	if !n.adoptUpstream {
		for _, hop := range hops {
			if err := n.refuseUnrecorded(ctx, nodes, string(route.TargetNode), routes.Route{Destination: route.DestinationCIDR, NextHop: hop}); err != nil {
				return fmt.Errorf("route %s for node %s: %w", route.DestinationCIDR, route.TargetNode, err)
			}
		}
	}
	// The next hop is the first of the node's addresses that a port of its
	// server really holds (routes.Add checks): a node listing another's IP
	// first in its status gets no route through it.
	for _, hop := range hops {
		err = n.r.Add(ctx, routes.Route{Destination: route.DestinationCIDR, NextHop: hop}, string(route.TargetNode), serverID)
		if !errors.Is(err, routes.ErrNoPort) {
			return err
		}
	}
	return err
}

// refused records a refused pod CIDR as a Warning Event on the Node.
func (n *nodeRoutes) refused(ctx context.Context, nodes []corev1.Node, name, why string) {
	klog.FromContext(ctx).Info("Refusing a node's pod CIDR route", "node", name, "reason", why)
	if n.events == nil {
		return
	}
	rec := n.events()
	if rec == nil {
		return
	}
	for i := range nodes {
		if nodes[i].Name == name {
			rec.Event(&nodes[i], corev1.EventTypeWarning, reasonPodCIDRRefused, "No route written to Neutron: "+why)
			return
		}
	}
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
		if !routes.Initialized(&node) {
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

// nextHop is the route's first node InternalIP of the destination's family.
func nextHop(route *cloudprovider.Route) string {
	if hops := nextHops(route); len(hops) > 0 {
		return hops[0]
	}
	return ""
}

// nextHops are the route's node InternalIPs of the destination's family.
func nextHops(route *cloudprovider.Route) []string {
	v6 := strings.Contains(route.DestinationCIDR, ":")
	var out []string
	for _, a := range route.TargetNodeAddresses {
		if a.Type == corev1.NodeInternalIP && strings.Contains(a.Address, ":") == v6 {
			out = append(out, a.Address)
		}
	}
	return out
}

// SetClusterCIDRs gives the routes --cluster-cidr (comma-separated), which
// every pod CIDR must lie in, and settles the node mask sizes against it;
// the route controller's constructor calls it.
func (w *WithServices) SetClusterCIDRs(clusterCIDR string) error {
	policy, err := routes.NewPodCIDRPolicy(clusterCIDR, w.nodeMasks)
	if err != nil {
		return err
	}
	w.podCIDRs = policy
	return nil
}

// eventRecorder is the provider's recorder once Initialize made it.
func (i *instances) eventRecorder() record.EventRecorder {
	if r := i.recorder.Load(); r != nil {
		return *r
	}
	return nil
}
