package loadbalancer

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"

	"github.com/stackward/stackward/pkg/openstack"
)

func (g *gopherOctavia) GetLoadBalancer(ctx context.Context, id string) (*LoadBalancer, error) {
	var lb *loadbalancers.LoadBalancer
	err := g.do(ctx, "get_loadbalancer", func(ctx context.Context) error {
		var err error
		lb, err = loadbalancers.Get(ctx, g.client, id).Extract()
		return err
	})
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil, fmt.Errorf("load balancer %s: %w", id, openstack.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	out := fromGopherLB(lb)
	return &out, nil
}

func (g *gopherOctavia) SetLoadBalancerTags(ctx context.Context, id string, tags []string) error {
	return g.do(ctx, "update_loadbalancer", func(ctx context.Context) error {
		return loadbalancers.Update(ctx, g.client, id, loadbalancers.UpdateOpts{Tags: &tags}).Err
	})
}
