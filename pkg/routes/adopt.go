package routes

import (
	"context"
	"fmt"
	"slices"
)

// Adopt makes a route someone else put on the router (the upstream CCM,
// which keeps no record of its routes) this cluster's: it is recorded in
// the ledger with the port of serverID that holds the next hop, exactly as
// Add would have recorded it, and from then on Remove takes it and its
// address pair away. Nothing on the router or the port changes. The caller
// decides which node the route is for; Adopt checks what only the cloud
// can tell: the route is on the router and a port of the server holds the
// next hop (ErrNoPort if none does).
func (r *Routes) Adopt(ctx context.Context, route Route, node, serverID string) (Record, error) {
	routes, _, err := r.net.RouterRoutes(ctx, r.routerID)
	if err != nil {
		return Record{}, fmt.Errorf("routes of router %s: %w", r.routerID, err)
	}
	if !slices.Contains(routes, route) {
		return Record{}, fmt.Errorf("adopt route %s via %s: not on router %s", route.Destination, route.NextHop, r.routerID)
	}
	port, err := r.serverPort(ctx, serverID, route.NextHop)
	if err != nil {
		return Record{}, fmt.Errorf("adopt route %s via %s: %w", route.Destination, route.NextHop, err)
	}
	rec := Record{Route: route, Router: r.routerID, PortID: port.ID, ServerID: serverID, Node: node}
	if err := r.ledger.Put(ctx, rec); err != nil {
		return Record{}, fmt.Errorf("record adopted route %s via %s as this cluster's: %w", route.Destination, route.NextHop, err)
	}
	return rec, nil
}
