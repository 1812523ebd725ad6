package loadbalancer

import (
	"context"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

// Subnets filters on tags in Neutron (tags, tags-any, not-tags,
// not-tags-any), so only candidates come back.
func (g *gopherNeutron) Subnets(ctx context.Context, networkID string, filter TagFilter) ([]Subnet, error) {
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
	var list []subnets.Subnet
	err := g.do(ctx, "list_subnets", func(ctx context.Context) error {
		pages, err := subnets.List(g.client, opts).AllPages(ctx)
		if err != nil {
			return err
		}
		list, err = subnets.ExtractSubnets(pages)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Subnet, 0, len(list))
	for _, s := range list {
		out = append(out, Subnet{ID: s.ID, Name: s.Name, Tags: s.Tags})
	}
	return out, nil
}
