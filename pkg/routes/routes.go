// Package routes keeps a Neutron router's routes to the nodes' pod CIDRs:
// one route per pod CIDR with the node's address as next hop, and the pod
// CIDR in the node port's allowed_address_pairs so that Neutron's port
// security lets the pods' traffic through.
//
// A router and a network may be shared with other clusters and with the
// operator, so every write is limited to what this cluster made:
//   - A route is this cluster's only if its Ledger (a record kept in this
//     cluster's own apiserver, see ledger.go) says so. Neutron routes carry
//     no attribute to mark them, and the node's port, which could carry a
//     tag, is gone exactly when a deleted node's route must go; the ledger
//     survives restarts, leader changes and the node's deletion. A route
//     the ledger does not name is never reported, changed or removed.
//   - The address pair goes on the port of the node's own server (found by
//     the server's ID, never by an address alone, which another server may
//     hold) and comes off only that port, and only while it still belongs
//     to that server. Other pairs are written back exactly as read, MAC
//     included, and every port or router rewrite is a compare-and-swap on
//     Neutron's revision_number (If-Match), retried on 412.
//
// With the extraroute-atomic extension routes are added and removed one by
// one (add_extraroutes, remove_extraroutes); with plain extraroute the whole
// list is rewritten, compare-and-swap. A change that fails half way is
// rolled back, so the router and the ports agree.
//
// The policy of what may be routed lives here too: a pod CIDR is checked
// by PodCIDRPolicy before anything is written (a kubelet may register any
// pod CIDR), Record.OwnedBy says whether a Node is still its route's, and
// Adoptable decides which of the upstream CCM's unrecorded routes may be
// adopted for which Node (adoptpolicy.go). pkg/provider turns these into
// cloudprovider.Routes and Events.
package routes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/openstack"
)

// Route is one router route: a pod CIDR via the node's address.
type Route = openstack.Route

// Pair is one allowed address pair as Neutron returns it.
type Pair = openstack.AddressPair

// Port is a Neutron port: the one Port type of pkg/openstack.
type Port = openstack.Port

var _ Neutron = (*openstack.Neutron)(nil)

// New builds the routes of routerID on the Neutron adapter of clients and
// checks Neutron's extensions.
func New(ctx context.Context, clients *openstack.Clients, ledger Ledger, routerID string) (*Routes, error) {
	if clients.Neutron == nil {
		return nil, errors.New("routes need a Neutron client")
	}
	return NewWithNeutron(ctx, clients.Neutron, ledger, routerID)
}

// Neutron is the part of the network API the routes use.
type Neutron interface {
	// Extensions returns the aliases of the API extensions.
	Extensions(ctx context.Context) ([]string, error)
	// RouterRoutes returns the router's routes and its revision_number.
	RouterRoutes(ctx context.Context, routerID string) ([]Route, int, error)
	// AddRoutes and RemoveRoutes are extraroute-atomic's calls.
	AddRoutes(ctx context.Context, routerID string, routes []Route) error
	RemoveRoutes(ctx context.Context, routerID string, routes []Route) error
	// SetRoutes replaces the router's routes (plain extraroute) if the
	// router is still at revision; ErrConflict if not.
	SetRoutes(ctx context.Context, routerID string, routes []Route, revision int) error
	// ListPorts returns the ports whose device is the server.
	ListPorts(ctx context.Context, serverID string) ([]Port, error)
	// Port reads one port; when Neutron says it does not exist the error
	// wraps openstack.ErrNotFound.
	Port(ctx context.Context, portID string) (*Port, error)
	// SetAllowedAddressPairs replaces the port's pairs if the port is still
	// at revision; ErrConflict if not.
	SetAllowedAddressPairs(ctx context.Context, portID string, pairs []Pair, revision int) error
}

var (
	// ErrNoExtraRoute means Neutron cannot hold router routes.
	ErrNoExtraRoute = errors.New("neutron has neither the extraroute nor the extraroute-atomic extension")
	// ErrNoPort means the port does not exist, or the server has no port
	// with the next hop address.
	ErrNoPort = errors.New("no such port")
	// ErrConflict means a compare-and-swap lost: the resource changed
	// since it was read (Neutron's 412).
	ErrConflict = openstack.ErrConflict
	// ErrNotOwned means the route is not in this cluster's ledger, so it
	// is not this cluster's to change.
	ErrNotOwned = errors.New("route is not this cluster's")
)

// casAttempts bounds the read-modify-write retries of one change.
const casAttempts = 8

// Routes manages one router's routes.
type Routes struct {
	net      Neutron
	ledger   Ledger
	routerID string
	atomic   bool
	// mu serializes this process's read-modify-writes, so that its own
	// writers do not make each other's compare-and-swap fail.
	mu sync.Mutex
}

// NewWithNeutron checks that Neutron supports router routes.
func NewWithNeutron(ctx context.Context, net Neutron, ledger Ledger, routerID string) (*Routes, error) {
	if ledger == nil {
		return nil, errors.New("routes need a ledger of the routes this cluster made")
	}
	exts, err := net.Extensions(ctx)
	if err != nil {
		return nil, fmt.Errorf("list Neutron extensions: %w", err)
	}
	r := &Routes{net: net, ledger: ledger, routerID: routerID}
	switch {
	case slices.Contains(exts, "extraroute-atomic"):
		r.atomic = true
	case slices.Contains(exts, "extraroute"):
	default:
		return nil, ErrNoExtraRoute
	}
	return r, nil
}

// Atomic reports whether routes are changed with extraroute-atomic.
func (r *Routes) Atomic() bool { return r.atomic }

// RouterID is the managed router.
func (r *Routes) RouterID() string { return r.routerID }

// Owned is a route of this cluster, with whether the router has it now.
type Owned struct {
	Record
	OnRouter bool
}

// List returns this cluster's routes: those of the ledger, each with
// whether the router has it. Other routes on the router are not reported.
func (r *Routes) List(ctx context.Context) ([]Owned, error) {
	owned, _, err := r.Snapshot(ctx)
	return owned, err
}

// Snapshot is List plus the router's routes that the ledger does not name
// (another cluster's, the operator's, or the upstream CCM's waiting to be
// adopted), from one read of the router.
func (r *Routes) Snapshot(ctx context.Context) ([]Owned, []Route, error) {
	routes, _, err := r.net.RouterRoutes(ctx, r.routerID)
	if err != nil {
		return nil, nil, fmt.Errorf("routes of router %s: %w", r.routerID, err)
	}
	recs, err := r.ledger.List(ctx, r.routerID)
	if err != nil {
		return nil, nil, fmt.Errorf("ledger of routes of router %s: %w", r.routerID, err)
	}
	out := make([]Owned, 0, len(recs))
	recorded := make(map[Route]bool, len(recs))
	for _, rec := range recs {
		out = append(out, Owned{Record: rec, OnRouter: slices.Contains(routes, rec.Route)})
		recorded[rec.Route] = true
	}
	var others []Route
	for _, rt := range routes {
		if !recorded[rt] {
			others = append(others, rt)
		}
	}
	return out, others, nil
}

// Add routes the destination to the server's port holding the next hop:
// it records the route as this cluster's, lets the port carry the
// destination, then adds the route; if the route cannot be added the port
// is put back. The record stays until Remove: a route whose add failed
// without an answer may exist all the same.
func (r *Routes) Add(ctx context.Context, route Route, node, serverID string) error {
	port, err := r.serverPort(ctx, serverID, route.NextHop)
	if err != nil {
		return err
	}
	rec := Record{Route: route, Router: r.routerID, PortID: port.ID, ServerID: serverID, Node: node}
	if err := r.ledger.Put(ctx, rec); err != nil {
		return fmt.Errorf("record route %s via %s as this cluster's: %w", route.Destination, route.NextHop, err)
	}
	added, err := r.changePair(ctx, rec, true)
	if err != nil {
		return err
	}
	if err := r.changeRoutes(ctx, route, true); err != nil {
		if added {
			if _, rerr := r.changePair(ctx, rec, false); rerr != nil {
				return errors.Join(err, fmt.Errorf("roll back allowed address pair %s: %w", route.Destination, rerr))
			}
		}
		return err
	}
	return nil
}

// Remove deletes one of this cluster's routes, then its destination from
// the port it was added to (if that port still exists and still belongs to
// the same server), then the record. If the port cannot be changed the
// route is put back so that the next attempt starts from a consistent
// state. A route the ledger does not name is refused with ErrNotOwned.
func (r *Routes) Remove(ctx context.Context, route Route) error {
	rec, ok, err := r.ledger.Get(ctx, r.routerID, route)
	if err != nil {
		return fmt.Errorf("ledger of route %s via %s: %w", route.Destination, route.NextHop, err)
	}
	if !ok {
		return fmt.Errorf("remove route %s via %s on router %s: %w", route.Destination, route.NextHop, r.routerID, ErrNotOwned)
	}
	if err := r.changeRoutes(ctx, route, false); err != nil {
		return err
	}
	if _, err := r.changePair(ctx, rec, false); err != nil {
		if rerr := r.changeRoutes(ctx, route, true); rerr != nil {
			return errors.Join(err, fmt.Errorf("roll back route %s via %s: %w", route.Destination, route.NextHop, rerr))
		}
		return err
	}
	if err := r.ledger.Delete(ctx, r.routerID, route); err != nil {
		return fmt.Errorf("forget route %s via %s: %w", route.Destination, route.NextHop, err)
	}
	return nil
}

// serverPort is the server's port holding ip.
func (r *Routes) serverPort(ctx context.Context, serverID, ip string) (*Port, error) {
	ports, err := r.net.ListPorts(ctx, serverID)
	if err != nil {
		return nil, fmt.Errorf("ports of server %s: %w", serverID, err)
	}
	for _, p := range ports {
		if p.DeviceID == serverID && p.HasFixedIP(ip) {
			return &p, nil
		}
	}
	return nil, fmt.Errorf("server %s has no port with address %s: %w", serverID, ip, ErrNoPort)
}

func (r *Routes) changeRoutes(ctx context.Context, route Route, add bool) error {
	verb := map[bool]string{true: "add", false: "remove"}[add]
	var err error
	if r.atomic {
		if add {
			err = r.net.AddRoutes(ctx, r.routerID, []Route{route})
		} else {
			err = r.net.RemoveRoutes(ctx, r.routerID, []Route{route})
		}
	} else {
		err = r.rewrite(ctx, route, add)
	}
	if err != nil {
		return fmt.Errorf("%s route %s via %s on router %s: %w", verb, route.Destination, route.NextHop, r.routerID, err)
	}
	return nil
}

// rewrite adds or removes one route in the router's whole list, keeping
// every other route as read, compare-and-swap.
func (r *Routes) rewrite(ctx context.Context, route Route, add bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var err error
	for range casAttempts {
		var routes []Route
		var rev int
		routes, rev, err = r.net.RouterRoutes(ctx, r.routerID)
		if err != nil {
			return err
		}
		has := slices.Contains(routes, route)
		switch {
		case add && has, !add && !has:
			return nil
		case add:
			routes = append(routes, route)
		default:
			routes = slices.DeleteFunc(routes, func(x Route) bool { return x == route })
		}
		err = r.net.SetRoutes(ctx, r.routerID, routes, rev)
		if !errors.Is(err, ErrConflict) {
			return err
		}
		klog.FromContext(ctx).V(2).Info("Router changed under us; reading it again", "router", r.routerID, "revision", rev)
	}
	return err
}
