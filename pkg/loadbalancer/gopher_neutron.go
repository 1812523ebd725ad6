package loadbalancer

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/stackward/stackward/pkg/openstack"
)

var _ Neutron = (*gopherNeutron)(nil)

// gopherNeutron is the load balancers' part of Neutron through gophercloud.
type gopherNeutron struct {
	client *gophercloud.ServiceClient
	caller *openstack.Caller
}

// NewNeutron finds Neutron in the catalog of clients.
func NewNeutron(clients *openstack.Clients) (Neutron, error) {
	c, err := clients.NeutronClient()
	if err != nil {
		return nil, err
	}
	return &gopherNeutron{client: c, caller: clients.Caller}, nil
}

func (g *gopherNeutron) do(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return g.caller.Do(ctx, openstack.ServiceNetwork, op, fn)
}

func fromGopherFIP(f floatingips.FloatingIP) FloatingIP {
	return FloatingIP{ID: f.ID, Address: f.FloatingIP, NetworkID: f.FloatingNetworkID, PortID: f.PortID, Description: f.Description}
}

func (g *gopherNeutron) FloatingIPs(ctx context.Context, portID, address string) ([]FloatingIP, error) {
	if portID == "" && address == "" {
		return nil, fmt.Errorf("list floating IPs: neither a port nor an address to filter on")
	}
	var list []floatingips.FloatingIP
	err := g.do(ctx, "list_floatingips", func(ctx context.Context) error {
		pages, err := floatingips.List(g.client, floatingips.ListOpts{PortID: portID, FloatingIP: address}).AllPages(ctx)
		if err != nil {
			return err
		}
		list, err = floatingips.ExtractFloatingIPs(pages)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]FloatingIP, 0, len(list))
	for _, f := range list {
		out = append(out, fromGopherFIP(f))
	}
	return out, nil
}

func (g *gopherNeutron) CreateFloatingIP(ctx context.Context, fip FloatingIP) (*FloatingIP, error) {
	opts := floatingips.CreateOpts{FloatingNetworkID: fip.NetworkID, SubnetID: fip.SubnetID, FloatingIP: fip.Address,
		PortID: fip.PortID, Description: fip.Description}
	var f *floatingips.FloatingIP
	// Safe to retry: the floating IP is created attached to the VIP port,
	// and Neutron refuses a second one for the same fixed IP (409).
	err := g.do(ctx, "create_floatingip", func(ctx context.Context) error {
		var err error
		f, err = floatingips.Create(ctx, g.client, opts).Extract()
		return err
	})
	if err != nil {
		return nil, err
	}
	out := fromGopherFIP(*f)
	return &out, nil
}

func (g *gopherNeutron) AttachFloatingIP(ctx context.Context, id, portID string) error {
	return g.do(ctx, "update_floatingip", func(ctx context.Context) error {
		return floatingips.Update(ctx, g.client, id, floatingips.UpdateOpts{PortID: &portID}).Err
	})
}

func (g *gopherNeutron) DeleteFloatingIP(ctx context.Context, id string) error {
	return g.do(ctx, "delete_floatingip", func(ctx context.Context) error {
		err := floatingips.Delete(ctx, g.client, id).ExtractErr()
		if gophercloud.ResponseCodeIs(err, 404) {
			return nil // gone already: what we wanted
		}
		return err
	})
}

func (g *gopherNeutron) ExternalNetworks(ctx context.Context) ([]string, error) {
	yes := true
	var ids []string
	err := g.do(ctx, "list_networks", func(ctx context.Context) error {
		opts := external.ListOptsExt{ListOptsBuilder: networks.ListOpts{}, External: &yes}
		pages, err := networks.List(g.client, opts).AllPages(ctx)
		if err != nil {
			return err
		}
		var nets []networks.Network
		if err := networks.ExtractNetworksInto(pages, &nets); err != nil {
			return err
		}
		ids = ids[:0]
		for _, n := range nets {
			ids = append(ids, n.ID)
		}
		return nil
	})
	return ids, err
}

func (g *gopherNeutron) SubnetOfAddress(ctx context.Context, ip string) (string, error) {
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
		return "", err
	}
	for _, p := range list {
		for _, f := range p.FixedIPs {
			if f.IPAddress == ip {
				return f.SubnetID, nil
			}
		}
	}
	return "", fmt.Errorf("no port has the address %s: %w", ip, openstack.ErrNotFound)
}
