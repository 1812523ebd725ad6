package routes

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/stackward/stackward/pkg/openstack"
)

var _ Neutron = (*gopherNeutron)(nil)

// gopherNeutron is Neutron through gophercloud, every call through the
// shared Caller.
type gopherNeutron struct {
	client *gophercloud.ServiceClient
	caller *openstack.Caller
}

// New finds Neutron in the catalog of clients and checks its extensions.
func New(ctx context.Context, clients *openstack.Clients, ledger Ledger, routerID string) (*Routes, error) {
	c, err := clients.NeutronClient()
	if err != nil {
		return nil, err
	}
	return NewWithNeutron(ctx, &gopherNeutron{client: c, caller: clients.Caller}, ledger, routerID)
}

func (g *gopherNeutron) do(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return g.caller.Do(ctx, openstack.ServiceNetwork, op, fn)
}

func (g *gopherNeutron) Extensions(ctx context.Context) ([]string, error) {
	var aliases []string
	err := g.do(ctx, "list_extensions", func(ctx context.Context) error {
		pages, err := extensions.List(g.client).AllPages(ctx)
		if err != nil {
			return err
		}
		exts, err := extensions.ExtractExtensions(pages)
		if err != nil {
			return err
		}
		aliases = aliases[:0]
		for _, e := range exts {
			aliases = append(aliases, e.Alias)
		}
		return nil
	})
	return aliases, err
}

func (g *gopherNeutron) RouterRoutes(ctx context.Context, routerID string) ([]Route, int, error) {
	var r *routers.Router
	err := g.do(ctx, "get_router", func(ctx context.Context) error {
		var err error
		r, err = routers.Get(ctx, g.client, routerID).Extract()
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

func toGopher(routes []Route) []routers.Route {
	out := make([]routers.Route, 0, len(routes))
	for _, r := range routes {
		out = append(out, routers.Route{DestinationCIDR: r.Destination, NextHop: r.NextHop})
	}
	return out
}

func (g *gopherNeutron) AddRoutes(ctx context.Context, routerID string, routes []Route) error {
	rs := toGopher(routes)
	return g.do(ctx, "add_extraroutes", func(ctx context.Context) error {
		return extraroutes.Add(ctx, g.client, routerID, extraroutes.Opts{Routes: &rs}).Err
	})
}

func (g *gopherNeutron) RemoveRoutes(ctx context.Context, routerID string, routes []Route) error {
	rs := toGopher(routes)
	return g.do(ctx, "remove_extraroutes", func(ctx context.Context) error {
		return extraroutes.Remove(ctx, g.client, routerID, extraroutes.Opts{Routes: &rs}).Err
	})
}

// conflict maps Neutron's 412 (If-Match revision mismatch) to ErrConflict.
func conflict(err error) error {
	if gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed) {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

func (g *gopherNeutron) SetRoutes(ctx context.Context, routerID string, routes []Route, revision int) error {
	rs := toGopher(routes)
	return conflict(g.do(ctx, "update_router", func(ctx context.Context) error {
		return routers.Update(ctx, g.client, routerID, routers.UpdateOpts{Routes: &rs, RevisionNumber: &revision}).Err
	}))
}

func fromGopher(p ports.Port) Port {
	out := Port{ID: p.ID, DeviceID: p.DeviceID, MAC: p.MACAddress, Revision: p.RevisionNumber}
	for _, f := range p.FixedIPs {
		out.FixedIPs = append(out.FixedIPs, f.IPAddress)
	}
	for _, pair := range p.AllowedAddressPairs {
		out.Pairs = append(out.Pairs, Pair{IP: pair.IPAddress, MAC: pair.MACAddress})
	}
	return out
}

func (g *gopherNeutron) ServerPorts(ctx context.Context, serverID string) ([]Port, error) {
	var list []ports.Port
	err := g.do(ctx, "list_ports", func(ctx context.Context) error {
		pages, err := ports.List(g.client, ports.ListOpts{DeviceID: serverID}).AllPages(ctx)
		if err != nil {
			return err
		}
		list, err = ports.ExtractPorts(pages)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Port, 0, len(list))
	for _, p := range list {
		out = append(out, fromGopher(p))
	}
	return out, nil
}

func (g *gopherNeutron) Port(ctx context.Context, portID string) (*Port, error) {
	var p *ports.Port
	err := g.do(ctx, "get_port", func(ctx context.Context) error {
		var err error
		p, err = ports.Get(ctx, g.client, portID).Extract()
		return err
	})
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil, fmt.Errorf("port %s: %w", portID, ErrNoPort)
	}
	if err != nil {
		return nil, err
	}
	out := fromGopher(*p)
	return &out, nil
}

func (g *gopherNeutron) SetAllowedAddressPairs(ctx context.Context, portID string, pairs []Pair, revision int) error {
	ap := make([]ports.AddressPair, 0, len(pairs))
	for _, p := range pairs {
		ap = append(ap, ports.AddressPair{IPAddress: p.IP, MACAddress: p.MAC})
	}
	return conflict(g.do(ctx, "update_port", func(ctx context.Context) error {
		return ports.Update(ctx, g.client, portID, ports.UpdateOpts{AllowedAddressPairs: &ap, RevisionNumber: &revision}).Err
	}))
}
