package provider

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/openstack"
	"github.com/stackward/stackward/pkg/routes"
)

// The upstream openstack-cloud-controller-manager keeps no record of its
// routes: a route of its is a bare "pod CIDR via node address" on the
// router (no name, no tag; Neutron routes have neither), and the allowed
// address pair of the pod CIDR on the node's port. Taking over, Stackward
// adopts such a route into its ledger when it is beyond doubt that node's:
//   - its destination is exactly one Node's pod CIDR, and no other Node
//     claims it;
//   - that Node is initialized by the CCM (its providerID is trusted), its
//     pod CIDR passes the pod CIDR policy (podcidr.go), and the next hop is
//     one of its InternalIPs;
//   - a port of the Node's server (found by its providerID, in Neutron)
//     holds the next hop: the cloud, not the kubelet, says the address is
//     the node's;
//   - no other route to the same destination is the node's already or a
//     candidate too.
// A route matching no Node's pod CIDR is another cluster's or the
// operator's: it is logged once and never touched. A route for a Node's
// pod CIDR that fails a check gets a Warning RouteNotAdopted Event on that
// Node naming the route and why, and nothing changes.

const (
	reasonRouteAdopted    = "AdoptedUpstreamRoute"
	reasonRouteNotAdopted = "RouteNotAdopted"
)

// adoptMemo remembers what was said about each route so that a route the
// reconcile meets every few seconds is logged and evented once per verdict.
type adoptMemo struct {
	mu   sync.Mutex
	said map[routes.Route]string
}

// first reports whether verdict is new for route, and remembers it.
func (m *adoptMemo) first(route routes.Route, verdict string) bool {
	if m == nil {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.said == nil {
		m.said = map[routes.Route]string{}
	}
	if m.said[route] == verdict {
		return false
	}
	m.said[route] = verdict
	return true
}

// adopt examines the routes the ledger does not name and records the
// upstream CCM's among them; it reports whether it recorded any. A cloud
// or ledger error stops it (the route controller retries): a route is never
// taken on uncertainty.
func (n *nodeRoutes) adopt(ctx context.Context, nodes []corev1.Node, owned []routes.Owned, others []routes.Route) (bool, error) {
	logger := klog.FromContext(ctx)
	adopted := false
	for _, rt := range others {
		cands := nodesWithPodCIDR(nodes, rt.Destination)
		if len(cands) == 0 {
			if n.memo.first(rt, "no node") {
				logger.Info("Route on the router is no Node's pod CIDR: not this cluster's, left alone", "destination", rt.Destination, "nextHop", rt.NextHop, "router", n.r.RouterID())
			}
			continue
		}
		node, serverID, why := n.adoptable(rt, cands, nodes, owned, others)
		if why != "" {
			n.notAdopted(ctx, cands, rt, why)
			continue
		}
		_, err := n.r.Adopt(ctx, rt, node.Name, serverID)
		if errors.Is(err, routes.ErrNoPort) {
			n.notAdopted(ctx, cands, rt, fmt.Sprintf("no port of server %s holds %s", serverID, rt.NextHop))
			continue
		}
		if err != nil {
			return adopted, err
		}
		adopted = true
		msg := fmt.Sprintf("Route %s via %s on router %s, made by the upstream CCM, is now this cluster's", rt.Destination, rt.NextHop, n.r.RouterID())
		logger.Info("Adopted a route of the upstream CCM", "node", node.Name, "destination", rt.Destination, "nextHop", rt.NextHop, "router", n.r.RouterID())
		n.memo.first(rt, "adopted")
		if rec := n.recorder(); rec != nil {
			rec.Event(node, corev1.EventTypeNormal, reasonRouteAdopted, msg)
		}
	}
	return adopted, nil
}

// adoptable checks everything but the cloud's ports; why is "" when the
// route may be adopted for node.
func (n *nodeRoutes) adoptable(rt routes.Route, cands []*corev1.Node, nodes []corev1.Node, owned []routes.Owned, others []routes.Route) (node *corev1.Node, serverID, why string) {
	if len(cands) > 1 {
		names := make([]string, len(cands))
		for i, c := range cands {
			names[i] = c.Name
		}
		return nil, "", fmt.Sprintf("its destination is the pod CIDR of several Nodes (%s)", strings.Join(names, ", "))
	}
	node = cands[0]
	if node.Spec.ProviderID == "" || uninitialized(node) {
		return nil, "", fmt.Sprintf("node %s is not initialized by the CCM yet", node.Name)
	}
	serverID, err := providerServer(node)
	if err != nil {
		return nil, "", fmt.Sprintf("node %s: %v", node.Name, err)
	}
	if refusal := n.cidrs.refuse(node.Name, rt.Destination, nodes); refusal != "" {
		return nil, "", refusal
	}
	if !hasInternalIP(node, rt.NextHop) {
		return nil, "", fmt.Sprintf("next hop %s is not an InternalIP of node %s", rt.NextHop, node.Name)
	}
	for _, o := range owned {
		if o.Destination == rt.Destination {
			return nil, "", fmt.Sprintf("this cluster already routes %s via %s", o.Destination, o.NextHop)
		}
	}
	for _, other := range others {
		if other != rt && other.Destination == rt.Destination && hasInternalIP(node, other.NextHop) {
			return nil, "", fmt.Sprintf("the router also routes %s via %s, another address of node %s", other.Destination, other.NextHop, node.Name)
		}
	}
	return node, serverID, ""
}

// notAdopted says once per verdict why a route for a Node's pod CIDR stays
// someone else's.
func (n *nodeRoutes) notAdopted(ctx context.Context, cands []*corev1.Node, rt routes.Route, why string) {
	if !n.memo.first(rt, why) {
		return
	}
	klog.FromContext(ctx).Info("Not adopting a route of a Node's pod CIDR; it is left alone", "destination", rt.Destination, "nextHop", rt.NextHop, "router", n.r.RouterID(), "reason", why)
	rec := n.recorder()
	if rec == nil {
		return
	}
	for _, c := range cands {
		rec.Event(c, corev1.EventTypeWarning, reasonRouteNotAdopted,
			fmt.Sprintf("Route %s via %s on router %s is not adopted (left as it is): %s", rt.Destination, rt.NextHop, n.r.RouterID(), why))
	}
}

// refuseUnrecorded is CreateRoute's check with adoption off: a route the
// router already has but the ledger does not name is someone else's, and
// recording it by adding it again would adopt it all the same.
func (n *nodeRoutes) refuseUnrecorded(ctx context.Context, nodes []corev1.Node, node string, route routes.Route) error {
	_, others, err := n.r.Snapshot(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(others, route) {
		return nil
	}
	why := fmt.Sprintf("router %s already has route %s via %s, not made by this cluster, and [Route] adopt-upstream-routes is false", n.r.RouterID(), route.Destination, route.NextHop)
	var cands []*corev1.Node
	for i := range nodes {
		if nodes[i].Name == node {
			cands = append(cands, &nodes[i])
		}
	}
	n.notAdopted(ctx, cands, route, why)
	return errors.New(why)
}

// recorder is the provider's Event recorder, nil until Initialize.
func (n *nodeRoutes) recorder() record.EventRecorder {
	if n.events == nil {
		return nil
	}
	return n.events()
}

// providerServer is the server ID of a Node's providerID.
func providerServer(node *corev1.Node) (string, error) {
	_, id, err := openstack.ParseProviderID(node.Spec.ProviderID)
	return id, err
}

// nodesWithPodCIDR are the Nodes whose pod CIDRs include cidr exactly.
func nodesWithPodCIDR(nodes []corev1.Node, cidr string) []*corev1.Node {
	want, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil
	}
	var out []*corev1.Node
	for i := range nodes {
		for _, c := range podCIDRsOf(&nodes[i]) {
			if p, err := netip.ParsePrefix(c); err == nil && p == want {
				out = append(out, &nodes[i])
				break
			}
		}
	}
	return out
}

func hasInternalIP(node *corev1.Node, ip string) bool {
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && a.Address == ip {
			return true
		}
	}
	return false
}
