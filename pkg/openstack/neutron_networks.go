package openstack

import (
	"context"
	"fmt"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// Subnet is the part of a Neutron subnet the load balancers choose by.
type Subnet struct {
	ID, Name string
	Tags     []string
}

// TagFilter is Neutron's tag query on a list: every tag (All) or any, or
// (Negate) not every / none of them.
type TagFilter struct {
	Tags        []string
	All, Negate bool
}

// ExternalNetworks returns the IDs of the router:external networks.
func (n *Neutron) ExternalNetworks(ctx context.Context) ([]string, error) {
	yes := true
	opts := external.ListOptsExt{ListOptsBuilder: networks.ListOpts{}, External: &yes}
	nets, err := listAll(ctx, n.caller, ServiceNetwork, "list_networks",
		func() pagination.Pager { return networks.List(n.client, opts) }, into[networks.Network](networks.ExtractNetworksInto))
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(nets))
	for _, nw := range nets {
		ids = append(ids, nw.ID)
	}
	return ids, nil
}

// Subnets lists a network's subnets that pass the tag filter. Neutron
// filters on tags (tags, tags-any, not-tags, not-tags-any), so only
// candidates come back.
func (n *Neutron) Subnets(ctx context.Context, networkID string, filter TagFilter) ([]Subnet, error) {
	opts := subnets.ListOpts{NetworkID: networkID}
	if tags := strings.Join(filter.Tags, ","); tags != "" {
		switch {
		case filter.All && !filter.Negate:
			opts.Tags = tags
		case filter.All && filter.Negate:
			opts.NotTags = tags // Neutron drops those with all: one is missing
		case !filter.All && !filter.Negate:
			opts.TagsAny = tags
		default:
			opts.NotTagsAny = tags // Neutron drops those with any: none present
		}
	}
	list, err := listAll(ctx, n.caller, ServiceNetwork, "list_subnets",
		func() pagination.Pager { return subnets.List(n.client, opts) }, subnets.ExtractSubnets)
	if err != nil {
		return nil, err
	}
	out := make([]Subnet, 0, len(list))
	for _, s := range list {
		out = append(out, Subnet{ID: s.ID, Name: s.Name, Tags: s.Tags})
	}
	return out, nil
}

// SubnetCIDR returns a subnet's CIDR.
func (n *Neutron) SubnetCIDR(ctx context.Context, subnetID string) (string, error) {
	var sn *subnets.Subnet
	err := n.do(ctx, "get_subnet", func(ctx context.Context) error {
		var err error
		sn, err = subnets.Get(ctx, n.client, subnetID).Extract()
		return err
	})
	if err != nil {
		return "", err
	}
	return sn.CIDR, nil
}

// SubnetOfAddress returns the subnet of the port holding a fixed IP; no
// such port wraps ErrNotFound.
func (n *Neutron) SubnetOfAddress(ctx context.Context, ip string) (string, error) {
	list, err := n.listPorts(ctx, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: ip}}})
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
	return "", fmt.Errorf("no port has the address %s: %w", ip, ErrNotFound)
}
