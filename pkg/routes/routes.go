// Package routes keeps a Neutron router's routes to the nodes' pod CIDRs:
// one route per pod CIDR with the node's address as next hop, and the pod
// CIDR in the node port's allowed_address_pairs so that Neutron's port
// security lets the pods' traffic through. With the extraroute-atomic
// extension routes are added and removed one by one (add_extraroutes,
// remove_extraroutes) and never race with others editing the router; with
// plain extraroute the whole list is rewritten under a lock. A change that
// fails half way is rolled back, so the router and the ports agree.
package routes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Route is one router route.
type Route struct {
	Destination string // a pod CIDR
	NextHop     string // the node's address
}

// Port is the part of a Neutron port the routes need.
type Port struct {
	ID string
	// AllowedAddressPairs are the pairs' IP addresses (or CIDRs).
	AllowedAddressPairs []string
}

// Neutron is the part of the network API the routes use.
type Neutron interface {
	// Extensions returns the aliases of the API extensions.
	Extensions(ctx context.Context) ([]string, error)
	RouterRoutes(ctx context.Context, routerID string) ([]Route, error)
	// AddRoutes and RemoveRoutes are extraroute-atomic's calls.
	AddRoutes(ctx context.Context, routerID string, routes []Route) error
	RemoveRoutes(ctx context.Context, routerID string, routes []Route) error
	// SetRoutes replaces the router's routes (plain extraroute).
	SetRoutes(ctx context.Context, routerID string, routes []Route) error
	// PortByIP finds the port holding a fixed IP; ErrNoPort when none does.
	PortByIP(ctx context.Context, ip string) (*Port, error)
	SetAllowedAddressPairs(ctx context.Context, portID string, pairs []string) error
}

var (
	// ErrNoExtraRoute means Neutron cannot hold router routes.
	ErrNoExtraRoute = errors.New("neutron has neither the extraroute nor the extraroute-atomic extension")
	// ErrNoPort means no port has the next hop address.
	ErrNoPort = errors.New("no port has the address")
)

// Routes manages one router's routes.
type Routes struct {
	net      Neutron
	routerID string
	atomic   bool
	// mu serializes read-modify-writes: a port's pairs, and the router's
	// whole route list without extraroute-atomic.
	mu sync.Mutex
}

// NewWithNeutron checks that Neutron supports router routes.
func NewWithNeutron(ctx context.Context, net Neutron, routerID string) (*Routes, error) {
	exts, err := net.Extensions(ctx)
	if err != nil {
		return nil, fmt.Errorf("list Neutron extensions: %w", err)
	}
	r := &Routes{net: net, routerID: routerID}
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

// List returns the router's routes.
func (r *Routes) List(ctx context.Context) ([]Route, error) {
	routes, err := r.net.RouterRoutes(ctx, r.routerID)
	if err != nil {
		return nil, fmt.Errorf("routes of router %s: %w", r.routerID, err)
	}
	return routes, nil
}

// Add lets the next hop's port carry the destination, then adds the
// route; if the route cannot be added the port is put back.
func (r *Routes) Add(ctx context.Context, route Route) error {
	added, err := r.setPair(ctx, route.NextHop, route.Destination, true)
	if err != nil {
		return err
	}
	if err := r.changeRoutes(ctx, route, true); err != nil {
		if added {
			if _, rerr := r.setPair(ctx, route.NextHop, route.Destination, false); rerr != nil {
				return errors.Join(err, fmt.Errorf("roll back allowed address pair %s: %w", route.Destination, rerr))
			}
		}
		return err
	}
	return nil
}

// Remove deletes the route, then the destination from the next hop's
// port (if the port still exists); if the port cannot be changed the route
// is put back so that the next attempt starts from a consistent state.
func (r *Routes) Remove(ctx context.Context, route Route) error {
	if err := r.changeRoutes(ctx, route, false); err != nil {
		return err
	}
	_, err := r.setPair(ctx, route.NextHop, route.Destination, false)
	if err == nil || errors.Is(err, ErrNoPort) {
		return nil // no port: the node's server is gone, and its pairs with it
	}
	if rerr := r.changeRoutes(ctx, route, true); rerr != nil {
		return errors.Join(err, fmt.Errorf("roll back route %s via %s: %w", route.Destination, route.NextHop, rerr))
	}
	return err
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

func (r *Routes) rewrite(ctx context.Context, route Route, add bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	routes, err := r.net.RouterRoutes(ctx, r.routerID)
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
	return r.net.SetRoutes(ctx, r.routerID, routes)
}

// setPair adds or removes cidr in the allowed address pairs of the port
// holding ip, and says whether it changed anything.
func (r *Routes) setPair(ctx context.Context, ip, cidr string, add bool) (bool, error) {
	// Read and write under the lock: the two pod CIDRs of a dual-stack
	// node share its port.
	r.mu.Lock()
	defer r.mu.Unlock()
	port, err := r.net.PortByIP(ctx, ip)
	if err != nil {
		return false, fmt.Errorf("port of next hop %s: %w", ip, err)
	}
	has := slices.Contains(port.AllowedAddressPairs, cidr)
	if has == add {
		return false, nil
	}
	pairs := slices.Clone(port.AllowedAddressPairs)
	if add {
		pairs = append(pairs, cidr)
	} else {
		pairs = slices.DeleteFunc(pairs, func(p string) bool { return p == cidr })
	}
	if err := r.net.SetAllowedAddressPairs(ctx, port.ID, pairs); err != nil {
		return false, fmt.Errorf("allowed address pairs of port %s: %w", port.ID, err)
	}
	return true, nil
}
