package routes

import (
	"context"
	"fmt"

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
func New(ctx context.Context, clients *openstack.Clients, routerID string) (*Routes, error) {
	c, err := clients.NeutronClient()
	if err != nil {
		return nil, err
	}
	return NewWithNeutron(ctx, &gopherNeutron{client: c, caller: clients.Caller}, routerID)
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

func (g *gopherNeutron) RouterRoutes(ctx context.Context, routerID string) ([]Route, error) {
	var r *routers.Router
	err := g.do(ctx, "get_router", func(ctx context.Context) error {
		var err error
		r, err = routers.Get(ctx, g.client, routerID).Extract()
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Route, 0, len(r.Routes))
	for _, x := range r.Routes {
		out = append(out, Route{Destination: x.DestinationCIDR, NextHop: x.NextHop})
	}
	return out, nil
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

func (g *gopherNeutron) SetRoutes(ctx context.Context, routerID string, routes []Route) error {
	rs := toGopher(routes)
	return g.do(ctx, "update_router", func(ctx context.Context) error {
		return routers.Update(ctx, g.client, routerID, routers.UpdateOpts{Routes: &rs}).Err
	})
}

func (g *gopherNeutron) PortByIP(ctx context.Context, ip string) (*Port, error) {
	var list []ports.Port
	err := g.do(ctx, "list_ports", func(ctx context.Context) error {
		pages, err := ports.List(g.client, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: ip}}}).AllPages(ctx)
		if err != nil {
			return err
		}
		list, err = ports.ExtractPorts(pages)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, p := range list {
		for _, f := range p.FixedIPs {
			if f.IPAddress != ip {
				continue
			}
			port := &Port{ID: p.ID}
			for _, pair := range p.AllowedAddressPairs {
				port.AllowedAddressPairs = append(port.AllowedAddressPairs, pair.IPAddress)
			}
			return port, nil
		}
	}
	return nil, fmt.Errorf("%w %s", ErrNoPort, ip)
}

func (g *gopherNeutron) SetAllowedAddressPairs(ctx context.Context, portID string, pairs []string) error {
	ap := make([]ports.AddressPair, 0, len(pairs))
	for _, p := range pairs {
		ap = append(ap, ports.AddressPair{IPAddress: p})
	}
	return g.do(ctx, "update_port", func(ctx context.Context) error {
		return ports.Update(ctx, g.client, portID, ports.UpdateOpts{AllowedAddressPairs: &ap}).Err
	})
}
