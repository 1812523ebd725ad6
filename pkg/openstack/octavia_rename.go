package openstack

import (
	"context"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
)

// The calls a cluster-name change needs (pkg/loadbalancer/rename.go):
// change names, descriptions and tags without touching anything else.

// RenameLoadBalancer sets a load balancer's name, description and tags.
func (o *Octavia) RenameLoadBalancer(ctx context.Context, id, name, description string, tags []string) error {
	return o.do(ctx, "update_loadbalancer", func(ctx context.Context) error {
		return loadbalancers.Update(ctx, o.client, id, loadbalancers.UpdateOpts{Name: &name, Description: &description, Tags: &tags}).Err
	})
}

// RenameListener sets a listener's name and tags.
func (o *Octavia) RenameListener(ctx context.Context, id, name string, tags []string) error {
	return o.do(ctx, "update_listener", func(ctx context.Context) error {
		return listeners.Update(ctx, o.client, id, listeners.UpdateOpts{Name: &name, Tags: &tags}).Err
	})
}

// RenamePool sets a pool's name.
func (o *Octavia) RenamePool(ctx context.Context, id, name string) error {
	return o.do(ctx, "update_pool", func(ctx context.Context) error {
		return pools.Update(ctx, o.client, id, pools.UpdateOpts{Name: &name}).Err
	})
}

// RenameMonitor sets a health monitor's name.
func (o *Octavia) RenameMonitor(ctx context.Context, id, name string) error {
	return o.do(ctx, "update_healthmonitor", func(ctx context.Context) error {
		return monitors.Update(ctx, o.client, id, monitors.UpdateOpts{Name: &name}).Err
	})
}
