package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// projectPageSize is the page size of the project listings: a 1,000-node
// cluster's ports are one page, and no single response is unbounded.
const projectPageSize = 1000

// ProjectPorts lists every port of the project, following pages. An empty
// project would list every project's ports with admin credentials: refused.
func (n *gopherNetwork) ProjectPorts(ctx context.Context, projectID string) ([]Port, error) {
	if projectID == "" {
		return nil, fmt.Errorf("ports of project: empty project ID")
	}
	var list []ports.Port
	err := n.caller.Do(ctx, ServiceNetwork, "list_ports", func(ctx context.Context) error {
		pages, err := ports.List(n.client, ports.ListOpts{ProjectID: projectID, Limit: projectPageSize}).AllPages(ctx)
		if err != nil {
			return err
		}
		list, err = ports.ExtractPorts(pages)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list ports of project %q: %w", projectID, err)
	}
	out := make([]Port, 0, len(list))
	for _, p := range list {
		out = append(out, toPort(p))
	}
	return out, nil
}

// ProjectFloatingIPs lists every floating IP of the project, following
// pages; an empty project is refused as for ProjectPorts.
func (n *gopherNetwork) ProjectFloatingIPs(ctx context.Context, projectID string) ([]FloatingIP, error) {
	if projectID == "" {
		return nil, fmt.Errorf("floating IPs of project: empty project ID")
	}
	var list []floatingips.FloatingIP
	err := n.caller.Do(ctx, ServiceNetwork, "list_floating_ips", func(ctx context.Context) error {
		pages, err := floatingips.List(n.client, floatingips.ListOpts{ProjectID: projectID, Limit: projectPageSize}).AllPages(ctx)
		if err != nil {
			return err
		}
		list, err = floatingips.ExtractFloatingIPs(pages)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list floating IPs of project %q: %w", projectID, err)
	}
	return toFloatingIPs(list), nil
}
