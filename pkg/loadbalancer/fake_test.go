package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// fakeOctavia is Octavia in memory. Every call is recorded by name; every
// change leaves the load balancer in settle (ACTIVE unless a test wants it
// PENDING_UPDATE or ERROR).
type fakeOctavia struct {
	mu     sync.Mutex
	calls  []string
	lbs    map[string]*fakeLB
	nextID int
	settle string
	err    map[string]error // by call name
}

type fakeLB struct {
	lb   LoadBalancer
	tree Tree
}

func newFakeOctavia() *fakeOctavia {
	return &fakeOctavia{lbs: map[string]*fakeLB{}, settle: StatusActive, err: map[string]error{}}
}

func (f *fakeOctavia) call(name string) error {
	f.calls = append(f.calls, name)
	return f.err[name]
}

func (f *fakeOctavia) id(kind string) string {
	f.nextID++
	return fmt.Sprintf("%s-%d", kind, f.nextID)
}

func (f *fakeOctavia) writes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if !strings.HasPrefix(c, "list") && !strings.HasPrefix(c, "get") && c != "tree" {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeOctavia) resetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

func (f *fakeOctavia) setStatus(id, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lbs[id].lb.ProvisioningStatus = status
}

func (f *fakeOctavia) only() *fakeLB {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, lb := range f.lbs {
		return lb
	}
	return nil
}

// mutate runs a change on a load balancer that must be ACTIVE, as Octavia.
func (f *fakeOctavia) mutate(lbID string, fn func(l *fakeLB) error) error {
	l := f.lbs[lbID]
	if l == nil {
		return errors.New("404")
	}
	if l.lb.ProvisioningStatus != StatusActive {
		return errors.New("409 immutable")
	}
	if err := fn(l); err != nil {
		return err
	}
	l.lb.ProvisioningStatus = f.settle
	return nil
}

func (f *fakeOctavia) lbOfListener(id string) string {
	for lbID, l := range f.lbs {
		for _, x := range l.tree.Listeners {
			if x.ID == id {
				return lbID
			}
		}
	}
	return ""
}

func (f *fakeOctavia) lbOfPool(id string) string {
	for lbID, l := range f.lbs {
		if _, ok := l.tree.Pools[id]; ok {
			return lbID
		}
	}
	return ""
}

func (f *fakeOctavia) FindLoadBalancers(_ context.Context, name, tag string) ([]LoadBalancer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("list_loadbalancers"); err != nil {
		return nil, err
	}
	var out []LoadBalancer
	for _, l := range f.lbs {
		if l.lb.Name == name && (tag == "" || slices.Contains(l.lb.Tags, tag)) {
			out = append(out, l.lb)
		}
	}
	return out, nil
}

func (f *fakeOctavia) ListLoadBalancers(_ context.Context, tag string) ([]LoadBalancer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("list_loadbalancers"); err != nil {
		return nil, err
	}
	var out []LoadBalancer
	for _, l := range f.lbs {
		if slices.Contains(l.lb.Tags, tag) {
			out = append(out, l.lb)
		}
	}
	return out, nil
}

func (f *fakeOctavia) LoadBalancersOnPort(_ context.Context, portID string) ([]LoadBalancer, error) {
	if err := f.call("list_loadbalancers"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []LoadBalancer
	for _, l := range f.lbs {
		if l.lb.VIPPortID == portID {
			out = append(out, l.lb)
		}
	}
	return out, nil
}

func (f *fakeOctavia) CreateLoadBalancer(_ context.Context, spec Spec) (*LoadBalancer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("create_loadbalancer"); err != nil {
		return nil, err
	}
	id := f.id("lb")
	l := &fakeLB{lb: LoadBalancer{ID: id, Name: spec.Name, ProvisioningStatus: "PENDING_CREATE", VIPAddress: "10.0.0.100",
		VIPPortID: "port-" + id, VIPSubnetID: spec.VIPSubnetID, VIPNetworkID: spec.VIPNetworkID, FlavorID: spec.FlavorID,
		AvailabilityZone: spec.Zone, Tags: spec.Tags, Provider: spec.Provider}, tree: Tree{Pools: map[string]*Pool{}}}
	if spec.VIPPortID != "" {
		l.lb.VIPPortID = spec.VIPPortID
	}
	for i, v := range spec.AdditionalVIPs {
		l.lb.AdditionalVIPs = append(l.lb.AdditionalVIPs, VIP{SubnetID: v.SubnetID, Address: fmt.Sprintf("fd00::%d", 100+i)})
	}
	for _, ls := range spec.Listeners {
		f.addListener(l, ls)
	}
	f.lbs[id] = l
	lb := l.lb
	return &lb, nil
}

func (f *fakeOctavia) addListener(l *fakeLB, ls ListenerSpec) {
	lid := f.id("listener")
	pool := ""
	if ls.Pool.Protocol != "" {
		pool = f.addPool(l, ls.Pool)
	}
	l.tree.Listeners = append(l.tree.Listeners, Listener{ID: lid, Protocol: ls.Protocol, Port: ls.Port, DefaultPoolID: pool,
		AllowedCIDRs: ls.AllowedCIDRs, ConnLimit: ls.ConnLimit, Timeouts: ls.Timeouts, Tags: ls.Tags, TLSRef: ls.TLSRef, InsertHeaders: ls.InsertHeaders})
}

func (f *fakeOctavia) addPool(l *fakeLB, ps PoolSpec) string {
	pid := f.id("pool")
	p := &Pool{ID: pid, Protocol: ps.Protocol, Method: ps.Method, Persistence: ps.Persistence, Members: slices.Clone(ps.Members)}
	if ps.Monitor != nil {
		p.Monitor = &Monitor{ID: f.id("monitor"), MonitorSpec: *ps.Monitor}
	}
	l.tree.Pools[pid] = p
	return pid
}

func (f *fakeOctavia) DeleteLoadBalancer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("delete_loadbalancer"); err != nil {
		return err
	}
	delete(f.lbs, id)
	return nil
}

func (f *fakeOctavia) Tree(_ context.Context, lbID string) (*Tree, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("tree"); err != nil {
		return nil, err
	}
	l := f.lbs[lbID]
	t := &Tree{Listeners: slices.Clone(l.tree.Listeners), Pools: map[string]*Pool{}}
	for id, p := range l.tree.Pools {
		cp := *p
		cp.Members = slices.Clone(p.Members)
		cp.Tags = slices.Clone(p.Tags)
		t.Pools[id] = &cp
	}
	return t, nil
}

func (f *fakeOctavia) CreateListener(_ context.Context, lbID string, spec ListenerSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("create_listener"); err != nil {
		return err
	}
	return f.mutate(lbID, func(l *fakeLB) error { f.addListener(l, spec); return nil })
}

func (f *fakeOctavia) UpdateListener(_ context.Context, id string, spec ListenerSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("update_listener"); err != nil {
		return err
	}
	return f.mutate(f.lbOfListener(id), func(l *fakeLB) error {
		for i := range l.tree.Listeners {
			if x := &l.tree.Listeners[i]; x.ID == id {
				x.AllowedCIDRs, x.ConnLimit, x.Timeouts = spec.AllowedCIDRs, spec.ConnLimit, spec.Timeouts
				x.TLSRef, x.InsertHeaders = spec.TLSRef, spec.InsertHeaders
			}
		}
		return nil
	})
}

func (f *fakeOctavia) DeleteListener(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("delete_listener"); err != nil {
		return err
	}
	return f.mutate(f.lbOfListener(id), func(l *fakeLB) error {
		l.tree.Listeners = slices.DeleteFunc(l.tree.Listeners, func(x Listener) bool { return x.ID == id })
		return nil
	})
}

func (f *fakeOctavia) CreatePool(_ context.Context, listenerID string, spec PoolSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("create_pool"); err != nil {
		return err
	}
	return f.mutate(f.lbOfListener(listenerID), func(l *fakeLB) error {
		pid := f.addPool(l, spec)
		for i := range l.tree.Listeners {
			if l.tree.Listeners[i].ID == listenerID {
				l.tree.Listeners[i].DefaultPoolID = pid
			}
		}
		return nil
	})
}

func (f *fakeOctavia) UpdatePool(_ context.Context, id string, spec PoolSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("update_pool"); err != nil {
		return err
	}
	return f.mutate(f.lbOfPool(id), func(l *fakeLB) error {
		l.tree.Pools[id].Method, l.tree.Pools[id].Persistence = spec.Method, spec.Persistence
		return nil
	})
}

func (f *fakeOctavia) SetPoolTags(_ context.Context, id string, tags []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("update_pool"); err != nil {
		return err
	}
	return f.mutate(f.lbOfPool(id), func(l *fakeLB) error { l.tree.Pools[id].Tags = slices.Clone(tags); return nil })
}

func (f *fakeOctavia) DeletePool(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("delete_pool"); err != nil {
		return err
	}
	return f.mutate(f.lbOfPool(id), func(l *fakeLB) error {
		delete(l.tree.Pools, id)
		for i := range l.tree.Listeners {
			if l.tree.Listeners[i].DefaultPoolID == id {
				l.tree.Listeners[i].DefaultPoolID = ""
			}
		}
		return nil
	})
}

func (f *fakeOctavia) SetMembers(_ context.Context, poolID string, members []Member) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("batch_update_members"); err != nil {
		return err
	}
	return f.mutate(f.lbOfPool(poolID), func(l *fakeLB) error { l.tree.Pools[poolID].Members = slices.Clone(members); return nil })
}

func (f *fakeOctavia) CreateMonitor(_ context.Context, poolID string, spec MonitorSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("create_healthmonitor"); err != nil {
		return err
	}
	return f.mutate(f.lbOfPool(poolID), func(l *fakeLB) error {
		l.tree.Pools[poolID].Monitor = &Monitor{ID: f.id("monitor"), MonitorSpec: spec}
		return nil
	})
}

func (f *fakeOctavia) monitorPool(id string) string {
	for _, l := range f.lbs {
		for pid, p := range l.tree.Pools {
			if p.Monitor != nil && p.Monitor.ID == id {
				return pid
			}
		}
	}
	return ""
}

func (f *fakeOctavia) UpdateMonitor(_ context.Context, id string, spec MonitorSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("update_healthmonitor"); err != nil {
		return err
	}
	pid := f.monitorPool(id)
	return f.mutate(f.lbOfPool(pid), func(l *fakeLB) error { l.tree.Pools[pid].Monitor.MonitorSpec = spec; return nil })
}

func (f *fakeOctavia) DeleteMonitor(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("delete_healthmonitor"); err != nil {
		return err
	}
	pid := f.monitorPool(id)
	return f.mutate(f.lbOfPool(pid), func(l *fakeLB) error { l.tree.Pools[pid].Monitor = nil; return nil })
}

// fakeNeutron holds floating IPs and answers the lookups.
type fakeNeutron struct {
	mu       sync.Mutex
	calls    []string
	fips     map[string]*FloatingIP
	external []string
	subnets  map[string]string // fixed IP -> subnet
	cidrs    map[string]string // subnet -> CIDR (memberaddr_test.go)
	nextID   int
	// floating subnets (networks_test.go); a full one is tested against
	// the simulator (networks_full_sim_test.go)
	floatingSubnets []Subnet
	// ports a port-id may name, and the error reading any port (portid_test.go)
	ports   map[string]*Port
	portErr error
}

func newFakeNeutron() *fakeNeutron {
	return &fakeNeutron{fips: map[string]*FloatingIP{}, external: []string{"public"}, subnets: map[string]string{"10.0.0.1": "subnet-nodes", "10.0.0.2": "subnet-nodes", "10.0.0.3": "subnet-nodes"}}
}

func (n *fakeNeutron) FloatingIPs(_ context.Context, portID, address string) ([]FloatingIP, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, "list_floatingips")
	var out []FloatingIP
	for _, f := range n.fips {
		if (portID != "" && f.PortID == portID) || (portID == "" && f.Address == address) {
			out = append(out, *f)
		}
	}
	return out, nil
}

func (n *fakeNeutron) CreateFloatingIP(_ context.Context, fip FloatingIP) (*FloatingIP, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, "create_floatingip")
	n.nextID++
	fip.ID = fmt.Sprintf("fip-%d", n.nextID)
	if fip.Address == "" {
		fip.Address = fmt.Sprintf("203.0.113.%d", n.nextID)
	}
	n.fips[fip.ID] = &fip
	out := fip
	return &out, nil
}

func (n *fakeNeutron) AttachFloatingIP(_ context.Context, id, portID string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, "update_floatingip")
	n.fips[id].PortID = portID
	return nil
}

func (n *fakeNeutron) DeleteFloatingIP(_ context.Context, id string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, "delete_floatingip")
	delete(n.fips, id)
	return nil
}

func (n *fakeNeutron) ExternalNetworks(context.Context) ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, "list_networks")
	return n.external, nil
}

func (n *fakeNeutron) SubnetOfAddress(_ context.Context, ip string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, "list_ports")
	if s, ok := n.subnets[ip]; ok {
		return s, nil
	}
	return "", errors.New("no port")
}
