package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/routes"
)

// Adopting the upstream CCM's routes: which route may be adopted for which
// node is pkg/routes' decision (routes.Adoptable, with the rules); here the
// CCM lists, adopts and says what it did. A route for a Node's pod CIDR
// that fails a check gets a Warning RouteNotAdopted Event on that Node
// naming the route and why, and nothing changes; a route matching no
// Node's pod CIDR is logged once.

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
		cands := routes.NodesWithPodCIDR(nodes, rt.Destination)
		if len(cands) == 0 {
			if n.memo.first(rt, "no node") {
				logger.Info("Route on the router is no Node's pod CIDR: not this cluster's, left alone", "destination", rt.Destination, "nextHop", rt.NextHop, "router", n.r.RouterID())
			}
			continue
		}
		node, serverID, why := routes.Adoptable(rt, cands, nodes, owned, others, n.cidrs)
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
