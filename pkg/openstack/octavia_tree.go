package openstack

import (
	"context"
	"maps"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"golang.org/x/sync/errgroup"
)

// Tree costs three calls whatever the size of the load balancer (listeners,
// pools, and the status tree that carries every member's address and
// port), plus one per health monitor for its settings. The three are made
// at once, then the monitors at once: a sync waits for two answers, not
// three plus one per monitor.
func (o *Octavia) Tree(ctx context.Context, lbID string) (*Tree, error) {
	var (
		ls []listeners.Listener
		ps []pools.Pool
		st *loadbalancers.StatusTree
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		ls, err = listAll(gctx, o.caller, ServiceLoadBalancer, "list_listeners",
			func() pagination.Pager { return listeners.List(o.client, listeners.ListOpts{LoadbalancerID: lbID}) }, listeners.ExtractListeners)
		return err
	})
	g.Go(func() (err error) {
		ps, err = listAll(gctx, o.caller, ServiceLoadBalancer, "list_pools",
			func() pagination.Pager { return pools.List(o.client, pools.ListOpts{LoadbalancerID: lbID}) }, pools.ExtractPools)
		return err
	})
	g.Go(func() error {
		return o.do(gctx, "get_loadbalancer_status", func(ctx context.Context) error {
			var err error
			st, err = loadbalancers.GetStatuses(ctx, o.client, lbID).Extract()
			return err
		})
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	mons := make([]*monitors.Monitor, len(ps))
	g, gctx = errgroup.WithContext(ctx)
	for i, p := range ps {
		if p.MonitorID == "" {
			continue
		}
		g.Go(func() error {
			return o.do(gctx, "get_healthmonitor", func(ctx context.Context) error {
				var err error
				mons[i], err = monitors.Get(ctx, o.client, p.MonitorID).Extract()
				return err
			})
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	tree := &Tree{Pools: map[string]*Pool{}}
	for _, l := range ls {
		tree.Listeners = append(tree.Listeners, Listener{ID: l.ID, Name: l.Name, Protocol: l.Protocol, Port: l.ProtocolPort,
			DefaultPoolID: l.DefaultPoolID, AllowedCIDRs: l.AllowedCIDRs, ConnLimit: l.ConnLimit,
			Timeouts: Timeouts{ClientData: l.TimeoutClientData, MemberConnect: l.TimeoutMemberConnect,
				MemberData: l.TimeoutMemberData, TCPInspect: l.TimeoutTCPInspect}, Tags: l.Tags,
			TLSRef: l.DefaultTlsContainerRef, InsertHeaders: l.InsertHeaders, ProvisioningStatus: l.ProvisioningStatus})
	}
	for i, p := range ps {
		pool := &Pool{ID: p.ID, Name: p.Name, Protocol: p.Protocol, Method: p.LBMethod, Persistence: p.Persistence.Type, Tags: p.Tags}
		if mon := mons[i]; mon != nil {
			pool.Monitor = &Monitor{ID: mon.ID, MonitorSpec: MonitorSpec{Name: mon.Name, Type: mon.Type, Delay: mon.Delay,
				Timeout: mon.Timeout, MaxRetries: mon.MaxRetries, MaxRetriesDown: mon.MaxRetriesDown, URLPath: mon.URLPath}}
		}
		tree.Pools[p.ID] = pool
	}
	if st != nil && st.Loadbalancer != nil {
		for _, l := range st.Loadbalancer.Listeners {
			for _, sp := range l.Pools {
				pool := tree.Pools[sp.ID]
				if pool == nil {
					continue
				}
				for _, m := range sp.Members {
					pool.Members = append(pool.Members, Member{Address: m.Address, Port: m.ProtocolPort})
				}
			}
		}
	}
	return tree, nil
}

// CreateListener creates a listener with whatever of its default pool
// spec carries nested (pkg/loadbalancer sends the listener alone: outside
// a load balancer create Octavia 11 fails nested children with a 500);
// tried once (operations.go).
func (o *Octavia) CreateListener(ctx context.Context, lbID string, spec ListenerSpec) error {
	opts := listenerCreateOpts(spec)
	opts.LoadbalancerID = lbID
	return o.do(ctx, "create_listener", func(ctx context.Context) error {
		return listeners.Create(ctx, o.client, opts).Err
	})
}

// UpdateListener sets a listener's limits, allowed CIDRs, timeouts and,
// for a layer-7 listener, its certificate and headers.
func (o *Octavia) UpdateListener(ctx context.Context, id string, spec ListenerSpec) error {
	cidrs := spec.AllowedCIDRs
	if cidrs == nil {
		cidrs = []string{} // clears a restriction
	}
	opts := listeners.UpdateOpts{ConnLimit: &spec.ConnLimit, AllowedCIDRs: &cidrs}
	opts.DefaultTlsContainerRef, opts.InsertHeaders = l7UpdateFields(spec)
	setTimeouts(&opts.TimeoutClientData, &opts.TimeoutMemberConnect, &opts.TimeoutMemberData, &opts.TimeoutTCPInspect, spec.Timeouts)
	return o.do(ctx, "update_listener", func(ctx context.Context) error {
		return listeners.Update(ctx, o.client, id, opts).Err
	})
}

// DeleteListener deletes a listener.
func (o *Octavia) DeleteListener(ctx context.Context, id string) error {
	return o.do(ctx, "delete_listener", func(ctx context.Context) error {
		return listeners.Delete(ctx, o.client, id).ExtractErr()
	})
}

// CreatePool creates a listener's default pool; tried once.
func (o *Octavia) CreatePool(ctx context.Context, listenerID string, spec PoolSpec) error {
	opts := poolCreateOpts(spec)
	opts.ListenerID = listenerID
	return o.do(ctx, "create_pool", func(ctx context.Context) error {
		return pools.Create(ctx, o.client, opts).Err
	})
}

// UpdatePool sets a pool's method and session persistence.
func (o *Octavia) UpdatePool(ctx context.Context, id string, spec PoolSpec) error {
	return o.do(ctx, "update_pool", func(ctx context.Context) error {
		// An empty SessionPersistence is sent as null: no persistence.
		persistence := pools.SessionPersistence{Type: spec.Persistence}
		return pools.Update(ctx, o.client, id, pools.UpdateOpts{LBMethod: pools.LBMethod(spec.Method), Persistence: &persistence}).Err
	})
}

// SetPoolTags replaces a pool's tags, and changes nothing else.
func (o *Octavia) SetPoolTags(ctx context.Context, id string, tags []string) error {
	return o.do(ctx, "update_pool", func(ctx context.Context) error {
		return pools.Update(ctx, o.client, id, pools.UpdateOpts{Tags: &tags}).Err
	})
}

// DeletePool deletes a pool.
func (o *Octavia) DeletePool(ctx context.Context, id string) error {
	return o.do(ctx, "delete_pool", func(ctx context.Context) error {
		return pools.Delete(ctx, o.client, id).ExtractErr()
	})
}

// SetMembers replaces a pool's members in one batch call.
func (o *Octavia) SetMembers(ctx context.Context, poolID string, members []Member) error {
	opts := make([]pools.BatchUpdateMemberOpts, 0, len(members))
	for _, m := range members {
		o := pools.BatchUpdateMemberOpts{Address: m.Address, ProtocolPort: m.Port}
		if m.Name != "" {
			name := m.Name
			o.Name = &name
		}
		if m.SubnetID != "" {
			subnet := m.SubnetID
			o.SubnetID = &subnet
		}
		if m.MonitorPort > 0 {
			port := m.MonitorPort
			o.MonitorPort = &port
		}
		opts = append(opts, o)
	}
	return o.do(ctx, "batch_update_members", func(ctx context.Context) error {
		return pools.BatchUpdateMembers(ctx, o.client, poolID, opts).ExtractErr()
	})
}

// CreateMonitor creates a pool's health monitor; tried once.
func (o *Octavia) CreateMonitor(ctx context.Context, poolID string, spec MonitorSpec) error {
	return o.do(ctx, "create_healthmonitor", func(ctx context.Context) error {
		return monitors.Create(ctx, o.client, monitorCreateOpts(poolID, spec)).Err
	})
}

// UpdateMonitor sets a health monitor's timings and URL path.
func (o *Octavia) UpdateMonitor(ctx context.Context, id string, spec MonitorSpec) error {
	opts := monitors.UpdateOpts{Delay: spec.Delay, Timeout: spec.Timeout, MaxRetries: spec.MaxRetries,
		MaxRetriesDown: spec.MaxRetriesDown, URLPath: spec.URLPath}
	return o.do(ctx, "update_healthmonitor", func(ctx context.Context) error {
		return monitors.Update(ctx, o.client, id, opts).Err
	})
}

// DeleteMonitor deletes a health monitor.
func (o *Octavia) DeleteMonitor(ctx context.Context, id string) error {
	return o.do(ctx, "delete_healthmonitor", func(ctx context.Context) error {
		return monitors.Delete(ctx, o.client, id).ExtractErr()
	})
}

// l7UpdateFields fills in what UpdateListener sends for a layer-7
// listener: the certificate of a TERMINATED_HTTPS one, the complete
// header set (empty clears it) of an HTTP or TERMINATED_HTTPS one.
func l7UpdateFields(spec ListenerSpec) (ref *string, headers *map[string]string) {
	if spec.Protocol != "HTTP" && spec.Protocol != "TERMINATED_HTTPS" {
		return nil, nil
	}
	h := maps.Clone(spec.InsertHeaders)
	if h == nil {
		h = map[string]string{}
	}
	if spec.Protocol == "TERMINATED_HTTPS" {
		r := spec.TLSRef
		ref = &r
	}
	return ref, &h
}
