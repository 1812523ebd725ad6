package loadbalancer

import (
	"context"
	"fmt"
	"slices"

	"github.com/stackward/stackward/pkg/openstack"
)

func (f *fakeOctavia) GetLoadBalancer(_ context.Context, id string) (*LoadBalancer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("get_loadbalancer"); err != nil {
		return nil, err
	}
	l := f.lbs[id]
	if l == nil {
		return nil, fmt.Errorf("load balancer %s: %w", id, openstack.ErrNotFound)
	}
	lb := l.lb
	lb.Tags = slices.Clone(l.lb.Tags)
	return &lb, nil
}

func (f *fakeOctavia) SetLoadBalancerTags(_ context.Context, id string, tags []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("update_loadbalancer"); err != nil {
		return err
	}
	return f.mutate(id, func(l *fakeLB) error { l.lb.Tags = slices.Clone(tags); return nil })
}
