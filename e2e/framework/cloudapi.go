package framework

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
)

// CloudAPI reads a cloud's state through the OpenStack APIs as the user of
// a cloud.conf sees it, whichever backend serves it: the tests compare
// what the CCM left in the cloud, not what the simulator holds inside.
type CloudAPI struct {
	Octavia, Neutron *gophercloud.ServiceClient
}

// NewCloudAPI authenticates as the cloud.conf's user (see TestCloud.CloudConf).
func NewCloudAPI(ctx context.Context, t testing.TB, cloudConf string) *CloudAPI {
	t.Helper()
	cfg, _, err := config.Load(cloudConf)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := openstack.NewClients(ctx, cfg, openstack.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oct, err := clients.ServiceClient("load-balancer")
	if err != nil {
		t.Fatal(err)
	}
	oct.ResourceBase = oct.Endpoint + "v2/"
	net, err := clients.ServiceClient("network")
	if err != nil {
		t.Fatal(err)
	}
	net.ResourceBase = net.Endpoint + "v2.0/"
	return &CloudAPI{Octavia: oct, Neutron: net}
}

// RouterID is the ID of the router named name.
func (a *CloudAPI) RouterID(ctx context.Context, t testing.TB, name string) string {
	t.Helper()
	pages, err := routers.List(a.Neutron, routers.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := routers.ExtractRouters(pages)
	if err != nil || len(rs) != 1 {
		t.Fatalf("router %s: %v %v", name, rs, err)
	}
	return rs[0].ID
}

// Routes are the router's extra routes.
func (a *CloudAPI) Routes(ctx context.Context, t testing.TB, routerID string) []routers.Route {
	t.Helper()
	rs, err := a.RoutesOf(ctx, routerID)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// RoutesOf is Routes for a caller that decides what an error means (a poll).
func (a *CloudAPI) RoutesOf(ctx context.Context, routerID string) ([]routers.Route, error) {
	r, err := routers.Get(ctx, a.Neutron, routerID).Extract()
	if err != nil {
		return nil, err
	}
	return r.Routes, nil
}

// LBTree is one load balancer as the tests compare it.
type LBTree struct {
	ID, Name, Status, VIPPortID, Provider string
	Tags                                  []string
	// Listeners by "PROTOCOL/port": the pool protocol, monitor type ("" for
	// none) and sorted members "ip:port".
	Listeners map[string]ListenerTree
}

// ListenerTree is a listener, its default pool and what hangs from it.
type ListenerTree struct {
	PoolProtocol string
	Monitor      string
	Members      []string
	AllowedCIDRs []string
}

// OctaviaState is every load balancer and the number of each kind of object.
type OctaviaState struct {
	LBs                                    map[string]LBTree // by name
	Listeners, Pools, Members, Monitors, N int
}

// State reads every load balancer the user sees, with its children, and
// counts every listener, pool, member and monitor (orphans included).
func (a *CloudAPI) State(ctx context.Context) (*OctaviaState, error) {
	st := &OctaviaState{LBs: map[string]LBTree{}}
	pages, err := loadbalancers.List(a.Octavia, nil).AllPages(ctx)
	if err != nil {
		return nil, err
	}
	lbs, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		return nil, err
	}
	st.N = len(lbs)
	for _, lb := range lbs {
		tree := LBTree{ID: lb.ID, Name: lb.Name, Status: lb.ProvisioningStatus, VIPPortID: lb.VipPortID, Provider: lb.Provider, Tags: lb.Tags, Listeners: map[string]ListenerTree{}}
		lp, err := listeners.List(a.Octavia, listeners.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)
		if err != nil {
			return nil, err
		}
		ls, err := listeners.ExtractListeners(lp)
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			lt := ListenerTree{AllowedCIDRs: l.AllowedCIDRs}
			if l.DefaultPoolID != "" {
				if lt, err = a.poolTree(ctx, l.DefaultPoolID, lt); err != nil {
					return nil, err
				}
			}
			tree.Listeners[l.Protocol+"/"+strconv.Itoa(l.ProtocolPort)] = lt
		}
		st.LBs[lb.Name] = tree
	}
	if err := a.count(ctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

func (a *CloudAPI) poolTree(ctx context.Context, poolID string, lt ListenerTree) (ListenerTree, error) {
	p, err := pools.Get(ctx, a.Octavia, poolID).Extract()
	if err != nil {
		return lt, err
	}
	lt.PoolProtocol = p.Protocol
	if p.MonitorID != "" {
		m, err := monitors.Get(ctx, a.Octavia, p.MonitorID).Extract()
		if err != nil {
			return lt, err
		}
		lt.Monitor = m.Type
	}
	mp, err := pools.ListMembers(a.Octavia, p.ID, nil).AllPages(ctx)
	if err != nil {
		return lt, err
	}
	ms, err := pools.ExtractMembers(mp)
	if err != nil {
		return lt, err
	}
	for _, m := range ms {
		lt.Members = append(lt.Members, m.Address+":"+strconv.Itoa(m.ProtocolPort))
	}
	slices.Sort(lt.Members)
	return lt, nil
}

func (a *CloudAPI) count(ctx context.Context, st *OctaviaState) error {
	lp, err := listeners.List(a.Octavia, nil).AllPages(ctx)
	if err != nil {
		return err
	}
	ls, err := listeners.ExtractListeners(lp)
	if err != nil {
		return err
	}
	pp, err := pools.List(a.Octavia, nil).AllPages(ctx)
	if err != nil {
		return err
	}
	ps, err := pools.ExtractPools(pp)
	if err != nil {
		return err
	}
	for _, pool := range ps {
		st.Members += len(pool.Members)
	}
	mp, err := monitors.List(a.Octavia, nil).AllPages(ctx)
	if err != nil {
		return err
	}
	ms, err := monitors.ExtractMonitors(mp)
	if err != nil {
		return err
	}
	st.Listeners, st.Pools, st.Monitors = len(ls), len(ps), len(ms)
	return nil
}

// FloatingIPs are every floating IP the user sees.
func (a *CloudAPI) FloatingIPs(ctx context.Context) ([]floatingips.FloatingIP, error) {
	pages, err := floatingips.List(a.Neutron, floatingips.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, err
	}
	return floatingips.ExtractFloatingIPs(pages)
}

// Ports are the ports matching opts.
func (a *CloudAPI) Ports(ctx context.Context, opts ports.ListOpts) ([]ports.Port, error) {
	pages, err := ports.List(a.Neutron, opts).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list ports: %w", err)
	}
	return ports.ExtractPorts(pages)
}

// AddressPairs are the allowed address pairs of the ports that carry ip as
// a fixed IP.
func (a *CloudAPI) AddressPairs(ctx context.Context, t testing.TB, ip string) []string {
	t.Helper()
	ps, err := a.Ports(ctx, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: ip}}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range ps {
		for _, pair := range p.AllowedAddressPairs {
			out = append(out, pair.IPAddress)
		}
	}
	return out
}

// WaitState polls the cloud until cond holds (a read error is retried
// until the timeout) and returns the state it held in.
func (a *CloudAPI) WaitState(ctx context.Context, t testing.TB, timeout time.Duration, what string, cond func(st *OctaviaState) bool) *OctaviaState {
	t.Helper()
	var last *OctaviaState
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		st, err := a.State(ctx)
		if err != nil {
			lastErr = err
			return false, nil
		}
		last = st
		return cond(st), nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last read error %v); last state %+v", what, err, lastErr, last)
	}
	return last
}

// NetworkID is the ID of the network named name.
func (a *CloudAPI) NetworkID(ctx context.Context, t testing.TB, name string) string {
	t.Helper()
	pages, err := networks.List(a.Neutron, networks.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := networks.ExtractNetworks(pages)
	if err != nil || len(ns) != 1 {
		t.Fatalf("network %s: %v %v", name, ns, err)
	}
	return ns[0].ID
}
