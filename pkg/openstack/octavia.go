package openstack

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// Octavia is every load-balancer API call Stackward makes, through
// gophercloud and the Caller; pkg/loadbalancer consumes it through its own
// narrow interface.
type Octavia struct {
	client *gophercloud.ServiceClient
	caller *Caller
}

// NewOctavia finds Octavia in the catalog of clients. It is not part of
// NewClients: a cloud without Octavia still serves nodes and routes.
func NewOctavia(clients *Clients) (*Octavia, error) {
	c, err := clients.ServiceClient("load-balancer")
	if err != nil {
		return nil, err
	}
	c.ResourceBase = c.Endpoint + "v2/"
	return &Octavia{client: c, caller: clients.Caller}, nil
}

func (o *Octavia) do(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return o.caller.Do(ctx, ServiceLoadBalancer, op, fn)
}

// FindLoadBalancers lists the load balancers with exactly this name that
// carry tag.
func (o *Octavia) FindLoadBalancers(ctx context.Context, name, tag string) ([]LoadBalancer, error) {
	opts := loadbalancers.ListOpts{Name: name}
	if tag != "" { // no tag: every load balancer of that name (adoption, pkg/loadbalancer/adopt.go)
		opts.Tags = []string{tag}
	}
	list, err := listAll(ctx, o.caller, ServiceLoadBalancer, "list_loadbalancers",
		func() pagination.Pager { return loadbalancers.List(o.client, opts) }, loadbalancers.ExtractLoadBalancers)
	if err != nil {
		return nil, err
	}
	out := make([]LoadBalancer, 0, len(list))
	for _, lb := range list {
		if lb.Name == name { // the name filter is exact in Octavia; be sure
			out = append(out, toLoadBalancer(&lb))
		}
	}
	return out, nil
}

// ListLoadBalancers lists the load balancers that carry tag: one cluster's,
// whose states one call reads for every Service waiting on them.
func (o *Octavia) ListLoadBalancers(ctx context.Context, tag string) ([]LoadBalancer, error) {
	list, err := listAll(ctx, o.caller, ServiceLoadBalancer, "list_loadbalancers",
		func() pagination.Pager {
			return loadbalancers.List(o.client, loadbalancers.ListOpts{Tags: []string{tag}})
		},
		loadbalancers.ExtractLoadBalancers)
	if err != nil {
		return nil, err
	}
	out := make([]LoadBalancer, 0, len(list))
	for _, lb := range list {
		if slices.Contains(lb.Tags, tag) { // the filter is exact in Octavia; be sure
			out = append(out, toLoadBalancer(&lb))
		}
	}
	return out, nil
}

// LoadBalancersOnPort lists the load balancers whose VIP is the port.
func (o *Octavia) LoadBalancersOnPort(ctx context.Context, portID string) ([]LoadBalancer, error) {
	list, err := listAll(ctx, o.caller, ServiceLoadBalancer, "list_loadbalancers",
		func() pagination.Pager {
			return loadbalancers.List(o.client, loadbalancers.ListOpts{VipPortID: portID})
		}, loadbalancers.ExtractLoadBalancers)
	if err != nil {
		return nil, err
	}
	out := make([]LoadBalancer, 0, len(list))
	for _, lb := range list {
		if lb.VipPortID == portID {
			out = append(out, toLoadBalancer(&lb))
		}
	}
	return out, nil
}

func toLoadBalancer(lb *loadbalancers.LoadBalancer) LoadBalancer {
	return LoadBalancer{ID: lb.ID, Name: lb.Name, Description: lb.Description, ProvisioningStatus: lb.ProvisioningStatus, VIPAddress: lb.VipAddress,
		VIPPortID: lb.VipPortID, VIPSubnetID: lb.VipSubnetID, VIPNetworkID: lb.VipNetworkID, FlavorID: lb.FlavorID,
		AvailabilityZone: lb.AvailabilityZone, Tags: lb.Tags, CreatedAt: lb.CreatedAt, UpdatedAt: lb.UpdatedAt, AdditionalVIPs: toVIPs(lb.AdditionalVips),
		Provider: lb.Provider}
}

func toVIPs(vips []loadbalancers.AdditionalVip) []VIP {
	var out []VIP
	for _, v := range vips {
		out = append(out, VIP{SubnetID: v.SubnetID, Address: v.IPAddress})
	}
	return out
}

// CreateLoadBalancer creates the whole tree of spec in one fully
// populated call.
func (o *Octavia) CreateLoadBalancer(ctx context.Context, spec Spec) (*LoadBalancer, error) {
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
	// Tried once (operations.go): a create answered with a 5xx may still
	// have happened, and the next reconcile finds it by name and tag.
	err := o.do(ctx, "create_loadbalancer", func(ctx context.Context) error {
		var err error
		lb, err = loadbalancers.Create(ctx, o.client, opts).Extract()
		return err
	})
	if err != nil {
		return nil, err
	}
	out := toLoadBalancer(lb)
	return &out, nil
}

func listenerCreateOpts(l ListenerSpec) listeners.CreateOpts {
	pool := poolCreateOpts(l.Pool)
	lo := listeners.CreateOpts{
		Name: l.Name, Protocol: listeners.Protocol(l.Protocol), ProtocolPort: l.Port,
		ConnLimit: &l.ConnLimit, AllowedCIDRs: l.AllowedCIDRs, Tags: l.Tags,
		DefaultTlsContainerRef: l.TLSRef, InsertHeaders: l.InsertHeaders,
	}
	if l.Pool.Protocol != "" { // none: the pool comes in its own call (the OVN provider, pkg/loadbalancer/providers.go)
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

// DeleteLoadBalancer deletes a load balancer and its children (cascade).
func (o *Octavia) DeleteLoadBalancer(ctx context.Context, id string) error {
	return o.do(ctx, "delete_loadbalancer", func(ctx context.Context) error {
		return loadbalancers.Delete(ctx, o.client, id, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
	})
}

// GetLoadBalancer reads one load balancer; a 404 wraps ErrNotFound.
func (o *Octavia) GetLoadBalancer(ctx context.Context, id string) (*LoadBalancer, error) {
	var lb *loadbalancers.LoadBalancer
	err := o.do(ctx, "get_loadbalancer", func(ctx context.Context) error {
		var err error
		lb, err = loadbalancers.Get(ctx, o.client, id).Extract()
		return err
	})
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil, fmt.Errorf("load balancer %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	out := toLoadBalancer(lb)
	return &out, nil
}

// SetLoadBalancerTags replaces a load balancer's tags.
func (o *Octavia) SetLoadBalancerTags(ctx context.Context, id string, tags []string) error {
	return o.do(ctx, "update_loadbalancer", func(ctx context.Context) error {
		return loadbalancers.Update(ctx, o.client, id, loadbalancers.UpdateOpts{Tags: &tags}).Err
	})
}
