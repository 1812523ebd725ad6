package loadbalancer

import (
	"context"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"

	"github.com/stackward/stackward/pkg/openstack"
)

var _ Octavia = (*gopherOctavia)(nil)

// gopherOctavia is Octavia through gophercloud, every call through the
// shared Caller (metrics, retries of what is safe to retry).
type gopherOctavia struct {
	client *gophercloud.ServiceClient
	caller *openstack.Caller
}

// NewOctavia finds Octavia in the catalog of clients.
func NewOctavia(clients *openstack.Clients) (Octavia, error) {
	c, err := clients.ServiceClient("load-balancer")
	if err != nil {
		return nil, err
	}
	c.ResourceBase = c.Endpoint + "v2/"
	return &gopherOctavia{client: c, caller: clients.Caller}, nil
}

func (g *gopherOctavia) do(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return g.caller.Do(ctx, openstack.ServiceLoadBalancer, op, fn)
}

func (g *gopherOctavia) FindLoadBalancers(ctx context.Context, name, tag string) ([]LoadBalancer, error) {
	var list []loadbalancers.LoadBalancer
	err := g.do(ctx, "list_loadbalancers", func(ctx context.Context) error {
		pages, err := loadbalancers.List(g.client, loadbalancers.ListOpts{Name: name, Tags: []string{tag}}).AllPages(ctx)
		if err != nil {
			return err
		}
		list, err = loadbalancers.ExtractLoadBalancers(pages)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]LoadBalancer, 0, len(list))
	for _, lb := range list {
		if lb.Name == name { // the name filter is exact in Octavia; be sure
			out = append(out, fromGopherLB(&lb))
		}
	}
	return out, nil
}

func fromGopherLB(lb *loadbalancers.LoadBalancer) LoadBalancer {
	return LoadBalancer{ID: lb.ID, Name: lb.Name, ProvisioningStatus: lb.ProvisioningStatus, VIPAddress: lb.VipAddress,
		VIPPortID: lb.VipPortID, VIPSubnetID: lb.VipSubnetID, VIPNetworkID: lb.VipNetworkID, FlavorID: lb.FlavorID,
		AvailabilityZone: lb.AvailabilityZone, Tags: lb.Tags, CreatedAt: lb.CreatedAt, AdditionalVIPs: fromGopherVIPs(lb.AdditionalVips),
		Provider: lb.Provider}
}

func fromGopherVIPs(vips []loadbalancers.AdditionalVip) []VIP {
	var out []VIP
	for _, v := range vips {
		out = append(out, VIP{SubnetID: v.SubnetID, Address: v.IPAddress})
	}
	return out
}

func (g *gopherOctavia) CreateLoadBalancer(ctx context.Context, spec Spec) (*LoadBalancer, error) {
	opts := loadbalancers.CreateOpts{
		Name: spec.Name, Description: spec.Description, Tags: spec.Tags,
		VipNetworkID: spec.VIPNetworkID, VipSubnetID: spec.VIPSubnetID, VipAddress: spec.VIPAddress, VipPortID: spec.VIPPortID,
		FlavorID: spec.FlavorID, AvailabilityZone: spec.Zone, Provider: spec.Provider,
	}
	for _, v := range spec.AdditionalVIPs {
		opts.AdditionalVips = append(opts.AdditionalVips, loadbalancers.AdditionalVip{SubnetID: v.SubnetID, IPAddress: v.Address})
	}
	for _, l := range spec.Listeners {
		lo := listenerCreateOpts(l)
		opts.Listeners = append(opts.Listeners, lo)
	}
	var lb *loadbalancers.LoadBalancer
	// A create answered with a 5xx may still have happened, and the
	// Caller retries it: a duplicate is then found by name and tag
	// (ErrDuplicate) rather than silently adopted.
	err := g.do(ctx, "create_loadbalancer", func(ctx context.Context) error {
		var err error
		lb, err = loadbalancers.Create(ctx, g.client, opts).Extract()
		return err
	})
	if err != nil {
		return nil, err
	}
	out := fromGopherLB(lb)
	return &out, nil
}

func listenerCreateOpts(l ListenerSpec) listeners.CreateOpts {
	pool := poolCreateOpts(l.Pool)
	lo := listeners.CreateOpts{
		Name: l.Name, Protocol: listeners.Protocol(l.Protocol), ProtocolPort: l.Port,
		ConnLimit: &l.ConnLimit, AllowedCIDRs: l.AllowedCIDRs, Tags: l.Tags,
		DefaultTlsContainerRef: l.TLSRef, InsertHeaders: l.InsertHeaders,
	}
	if l.Pool.Protocol != "" { // none: the pool comes in its own call (providers.go)
		lo.DefaultPool = &pool
	}
	setTimeouts(&lo.TimeoutClientData, &lo.TimeoutMemberConnect, &lo.TimeoutMemberData, &lo.TimeoutTCPInspect, l.Timeouts)
	return lo
}

func setTimeouts(client, connect, data, tcp **int, t Timeouts) {
	for _, f := range []struct {
		dst **int
		v   int
	}{{client, t.ClientData}, {connect, t.MemberConnect}, {data, t.MemberData}, {tcp, t.TCPInspect}} {
		if f.v > 0 {
			v := f.v
			*f.dst = &v
		}
	}
}

func poolCreateOpts(p PoolSpec) pools.CreateOpts {
	po := pools.CreateOpts{Name: p.Name, Protocol: pools.Protocol(p.Protocol), LBMethod: pools.LBMethod(p.Method)}
	if p.Persistence != "" {
		po.Persistence = &pools.SessionPersistence{Type: p.Persistence}
	}
	for _, m := range p.Members {
		mo := pools.CreateMemberOpts{Name: m.Name, Address: m.Address, ProtocolPort: m.Port, SubnetID: m.SubnetID}
		if m.MonitorPort > 0 {
			port := m.MonitorPort
			mo.MonitorPort = &port
		}
		po.Members = append(po.Members, mo)
	}
	if p.Monitor != nil {
		po.Monitor = monitorCreateOpts("", *p.Monitor)
	}
	return po
}

func monitorCreateOpts(poolID string, m MonitorSpec) monitors.CreateOpts {
	mo := monitors.CreateOpts{PoolID: poolID, Name: m.Name, Type: m.Type, Delay: m.Delay, Timeout: m.Timeout,
		MaxRetries: m.MaxRetries, MaxRetriesDown: m.MaxRetriesDown}
	if m.Type == "HTTP" {
		mo.URLPath, mo.HTTPMethod, mo.ExpectedCodes = m.URLPath, "GET", "200"
	}
	return mo
}

func (g *gopherOctavia) DeleteLoadBalancer(ctx context.Context, id string) error {
	return g.do(ctx, "delete_loadbalancer", func(ctx context.Context) error {
		return loadbalancers.Delete(ctx, g.client, id, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
	})
}

// Tree costs three calls whatever the size of the load balancer (listeners,
// pools, and the status tree that carries every member's address and
// port), plus one per health monitor for its settings.
func (g *gopherOctavia) Tree(ctx context.Context, lbID string) (*Tree, error) {
	var ls []listeners.Listener
	err := g.do(ctx, "list_listeners", func(ctx context.Context) error {
		pages, err := listeners.List(g.client, listeners.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
		if err != nil {
			return err
		}
		ls, err = listeners.ExtractListeners(pages)
		return err
	})
	if err != nil {
		return nil, err
	}
	var ps []pools.Pool
	err = g.do(ctx, "list_pools", func(ctx context.Context) error {
		pages, err := pools.List(g.client, pools.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
		if err != nil {
			return err
		}
		ps, err = pools.ExtractPools(pages)
		return err
	})
	if err != nil {
		return nil, err
	}
	var st *loadbalancers.StatusTree
	err = g.do(ctx, "get_loadbalancer_status", func(ctx context.Context) error {
		var err error
		st, err = loadbalancers.GetStatuses(ctx, g.client, lbID).Extract()
		return err
	})
	if err != nil {
		return nil, err
	}
	tree := &Tree{Pools: map[string]*Pool{}}
	for _, l := range ls {
		tree.Listeners = append(tree.Listeners, Listener{ID: l.ID, Protocol: l.Protocol, Port: l.ProtocolPort,
			DefaultPoolID: l.DefaultPoolID, AllowedCIDRs: l.AllowedCIDRs, ConnLimit: l.ConnLimit,
			Timeouts: Timeouts{ClientData: l.TimeoutClientData, MemberConnect: l.TimeoutMemberConnect,
				MemberData: l.TimeoutMemberData, TCPInspect: l.TimeoutTCPInspect}, Tags: l.Tags,
			TLSRef: l.DefaultTlsContainerRef, InsertHeaders: l.InsertHeaders})
	}
	for _, p := range ps {
		pool := &Pool{ID: p.ID, Protocol: p.Protocol, Method: p.LBMethod, Persistence: p.Persistence.Type}
		if p.MonitorID != "" {
			var mon *monitors.Monitor
			err := g.do(ctx, "get_healthmonitor", func(ctx context.Context) error {
				var err error
				mon, err = monitors.Get(ctx, g.client, p.MonitorID).Extract()
				return err
			})
			if err != nil {
				return nil, err
			}
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

func (g *gopherOctavia) CreateListener(ctx context.Context, lbID string, spec ListenerSpec) error {
	opts := listenerCreateOpts(spec)
	opts.LoadbalancerID = lbID
	return g.do(ctx, "create_listener", func(ctx context.Context) error {
		return listeners.Create(ctx, g.client, opts).Err
	})
}

func (g *gopherOctavia) UpdateListener(ctx context.Context, id string, spec ListenerSpec) error {
	cidrs := spec.AllowedCIDRs
	if cidrs == nil {
		cidrs = []string{} // clears a restriction
	}
	opts := listeners.UpdateOpts{ConnLimit: &spec.ConnLimit, AllowedCIDRs: &cidrs}
	opts.DefaultTlsContainerRef, opts.InsertHeaders = l7UpdateFields(spec)
	setTimeouts(&opts.TimeoutClientData, &opts.TimeoutMemberConnect, &opts.TimeoutMemberData, &opts.TimeoutTCPInspect, spec.Timeouts)
	return g.do(ctx, "update_listener", func(ctx context.Context) error {
		return listeners.Update(ctx, g.client, id, opts).Err
	})
}

func (g *gopherOctavia) DeleteListener(ctx context.Context, id string) error {
	return g.do(ctx, "delete_listener", func(ctx context.Context) error {
		return listeners.Delete(ctx, g.client, id).ExtractErr()
	})
}

func (g *gopherOctavia) CreatePool(ctx context.Context, listenerID string, spec PoolSpec) error {
	opts := poolCreateOpts(spec)
	opts.ListenerID = listenerID
	return g.do(ctx, "create_pool", func(ctx context.Context) error {
		return pools.Create(ctx, g.client, opts).Err
	})
}

func (g *gopherOctavia) UpdatePool(ctx context.Context, id string, spec PoolSpec) error {
	return g.do(ctx, "update_pool", func(ctx context.Context) error {
		// An empty SessionPersistence is sent as null: no persistence.
		persistence := pools.SessionPersistence{Type: spec.Persistence}
		return pools.Update(ctx, g.client, id, pools.UpdateOpts{LBMethod: pools.LBMethod(spec.Method), Persistence: &persistence}).Err
	})
}

func (g *gopherOctavia) DeletePool(ctx context.Context, id string) error {
	return g.do(ctx, "delete_pool", func(ctx context.Context) error {
		return pools.Delete(ctx, g.client, id).ExtractErr()
	})
}

func (g *gopherOctavia) SetMembers(ctx context.Context, poolID string, members []Member) error {
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
	return g.do(ctx, "batch_update_members", func(ctx context.Context) error {
		return pools.BatchUpdateMembers(ctx, g.client, poolID, opts).ExtractErr()
	})
}

func (g *gopherOctavia) CreateMonitor(ctx context.Context, poolID string, spec MonitorSpec) error {
	return g.do(ctx, "create_healthmonitor", func(ctx context.Context) error {
		return monitors.Create(ctx, g.client, monitorCreateOpts(poolID, spec)).Err
	})
}

func (g *gopherOctavia) UpdateMonitor(ctx context.Context, id string, spec MonitorSpec) error {
	opts := monitors.UpdateOpts{Delay: spec.Delay, Timeout: spec.Timeout, MaxRetries: spec.MaxRetries,
		MaxRetriesDown: spec.MaxRetriesDown, URLPath: spec.URLPath}
	return g.do(ctx, "update_healthmonitor", func(ctx context.Context) error {
		return monitors.Update(ctx, g.client, id, opts).Err
	})
}

func (g *gopherOctavia) DeleteMonitor(ctx context.Context, id string) error {
	return g.do(ctx, "delete_healthmonitor", func(ctx context.Context) error {
		return monitors.Delete(ctx, g.client, id).ExtractErr()
	})
}
