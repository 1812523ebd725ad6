package openstack

import (
	"context"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// Route is one route of a Neutron router.
type Route struct {
	Destination string // a CIDR
	NextHop     string
}

// Extensions returns the aliases of Neutron's API extensions.
func (n *Neutron) Extensions(ctx context.Context) ([]string, error) {
	exts, err := listAll(ctx, n.caller, ServiceNetwork, "list_extensions",
		func() pagination.Pager { return extensions.List(n.client) }, extensions.ExtractExtensions)
	if err != nil {
		return nil, err
	}
	aliases := make([]string, 0, len(exts))
	for _, e := range exts {
		aliases = append(aliases, e.Alias)
	}
	return aliases, nil
}

// RouterRoutes returns a router's routes and its revision_number.
func (n *Neutron) RouterRoutes(ctx context.Context, routerID string) ([]Route, int, error) {
	var r *routers.Router
	err := n.do(ctx, "get_router", func(ctx context.Context) error {
		var err error
		r, err = routers.Get(ctx, n.client, routerID).Extract()
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	out := make([]Route, 0, len(r.Routes))
	for _, x := range r.Routes {
		out = append(out, Route{Destination: x.DestinationCIDR, NextHop: x.NextHop})
	}
	return out, r.RevisionNumber, nil
}

func toRouterRoutes(routes []Route) []routers.Route {
	out := make([]routers.Route, 0, len(routes))
	for _, r := range routes {
		out = append(out, routers.Route{DestinationCIDR: r.Destination, NextHop: r.NextHop})
	}
	return out
}

// AddRoutes adds routes to a router (extraroute-atomic).
func (n *Neutron) AddRoutes(ctx context.Context, routerID string, routes []Route) error {
	rs := toRouterRoutes(routes)
	return n.do(ctx, "add_extraroutes", func(ctx context.Context) error {
		return extraroutes.Add(ctx, n.client, routerID, extraroutes.Opts{Routes: &rs}).Err
	})
}

// RemoveRoutes removes routes from a router (extraroute-atomic).
func (n *Neutron) RemoveRoutes(ctx context.Context, routerID string, routes []Route) error {
	rs := toRouterRoutes(routes)
	return n.do(ctx, "remove_extraroutes", func(ctx context.Context) error {
		return extraroutes.Remove(ctx, n.client, routerID, extraroutes.Opts{Routes: &rs}).Err
	})
}

// SetRoutes replaces a router's routes if it is still at revision
// (ErrConflict if not).
func (n *Neutron) SetRoutes(ctx context.Context, routerID string, routes []Route, revision int) error {
	rs := toRouterRoutes(routes)
	return conflict(n.do(ctx, "update_router", func(ctx context.Context) error {
		return routers.Update(ctx, n.client, routerID, routers.UpdateOpts{Routes: &rs, RevisionNumber: &revision}).Err
	}))
}
