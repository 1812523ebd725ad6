//go:build e2e

package realcloud

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/pkg/openstack"
)

const fidelityTag = "stackward-fidelity"

func (r *fidelityRun) octaviaSteps() {
	// Octavia checks a vip_port_id before any provider sees it: a port a
	// server uses is refused (pkg/loadbalancer refuses it earlier itself).
	r.record("octavia: a load balancer on server A's port is refused", true, func(o obs) {
		lb, err := r.octavia.CreateLoadBalancer(r.ctx, openstack.Spec{Name: "fid-on-port-a", Description: "fidelity",
			Tags: []string{fidelityTag}, VIPPortID: r.portA})
		o.err("error", err)
		answer := r.last()
		if lb != nil {
			r.deleteAtEnd(lb.ID)
		}
		o.errorBody("answer", answer)
		o.fields(r.n, "answer", decode(answer.Body), "faultstring")
		p, err := r.clients.Neutron.Port(r.ctx, r.portA)
		o.err("port error", err)
		if p != nil {
			o["port after"] = "device=" + r.n.norm(p.DeviceID)
		}
	})
	amphora := r.createLB("amphora")
	r.record("octavia amphora: a change while the load balancer is PENDING_CREATE", true, func(o obs) {
		o.err("error", r.octavia.CreateListener(r.ctx, amphora.ID, openstack.ListenerSpec{Protocol: "TCP", Port: 80, ConnLimit: -1}))
		o.errorBody("answer", r.last())
	})
	r.settle("octavia amphora: the create settles", amphora.ID, "PENDING_CREATE")
	r.children("octavia amphora", amphora.ID, "ROUND_ROBIN")
	r.record("octavia amphora: found by name and tag, not by another tag", true, func(o obs) {
		found, err := r.octavia.FindLoadBalancers(r.ctx, "fid-amphora", fidelityTag)
		o.err("error", err)
		o["with the tag"] = strconv.Itoa(len(found))
		found, err = r.octavia.FindLoadBalancers(r.ctx, "fid-amphora", "another-tag")
		o.err("error with another tag", err)
		o["with another tag"] = strconv.Itoa(len(found))
	})
	r.vipPort("octavia amphora: the VIP port", amphora.VIPPortID)
	r.record("neutron: a floating IP for the VIP port, and a second one for the same port", true, func(o obs) {
		neutron := r.clients.Neutron
		f, err := neutron.CreateFloatingIP(r.ctx, openstack.FloatingIP{NetworkID: r.publicNet, PortID: amphora.VIPPortID, Description: "fidelity"})
		o.err("first", err)
		if f == nil {
			return
		}
		r.n.add(f.ID, "fipid-vip")
		r.n.add(f.Address, "fip-vip")
		o["first"] = fmt.Sprintf("address=%s port=%s fixed=%s network=%s", r.n.norm(f.Address), r.n.norm(f.PortID), r.n.norm(f.FixedIPAddress), r.n.norm(f.NetworkID))
		second, err := neutron.CreateFloatingIP(r.ctx, openstack.FloatingIP{NetworkID: r.publicNet, PortID: amphora.VIPPortID})
		o.err("second", err)
		if second != nil {
			_ = neutron.DeleteFloatingIP(r.ctx, second.ID)
		} else {
			o.errorBody("second answer", r.last())
		}
		o.err("release", neutron.DeleteFloatingIP(r.ctx, f.ID))
	})
	// Last on this load balancer: a listener made in one call with its pool,
	// member and monitor. Zed answers 500 (only a load balancer create takes
	// a tree), so pkg/loadbalancer makes each child in its own call and
	// cloudsim refuses this the same way.
	r.record("octavia amphora: a listener with its pool, member and monitor in one call", true, func(o obs) {
		spec := r.listener("ROUND_ROBIN", true)
		spec.Port = 81
		o.err("error", r.octavia.CreateListener(r.ctx, amphora.ID, spec))
		o.errorBody("answer", r.last())
	})
	r.settle("octavia amphora: the one-call listener settles", amphora.ID, "PENDING_UPDATE")

	ovn := r.createLB("ovn")
	r.settle("octavia ovn: the create settles", ovn.ID, "PENDING_CREATE")
	// Only in its own call: a whole load balancer refused with 501 by the
	// OVN provider left real Octavia (Zed) hanging on every later create.
	r.record("octavia ovn: a ROUND_ROBIN pool is refused", false, func(o obs) {
		o.err("listener", r.octavia.CreateListener(r.ctx, ovn.ID, openstack.ListenerSpec{Name: "fid-rr", Protocol: "TCP", Port: 81, ConnLimit: -1}))
		if _, err := r.pollLB(ovn.ID, func(status string) bool { return !strings.HasPrefix(status, "PENDING_") }); err != nil {
			r.t.Fatal(err)
		}
		tree, err := r.octavia.Tree(r.ctx, ovn.ID)
		if err != nil || len(tree.Listeners) != 1 {
			r.t.Fatalf("ovn load balancer's listeners: %v, %v", tree, err)
		}
		mark := r.rec.Mark()
		o.err("pool", r.octavia.CreatePool(r.ctx, tree.Listeners[0].ID, openstack.PoolSpec{Name: "fid-pool", Protocol: "TCP", Method: "ROUND_ROBIN"}))
		o.errorBody("answer", r.last())
		o.err("delete listener", r.octavia.DeleteListener(r.ctx, tree.Listeners[0].ID))
		o.calls(r.n, "calls", r.rec.Since(mark))
	})
	r.settle("octavia ovn: the listener's delete settles", ovn.ID, "PENDING_UPDATE")
	r.children("octavia ovn", ovn.ID, "SOURCE_IP_PORT")
	r.vipPort("octavia ovn: the VIP port", ovn.VIPPortID)
	r.record("octavia: load balancers one per page", true, func(o obs) {
		oc, err := r.clients.ServiceClient("load-balancer")
		if err != nil {
			r.t.Fatal(err)
		}
		oc.ResourceBase = oc.Endpoint + "v2/"
		pages, err := loadbalancers.List(oc, loadbalancers.ListOpts{Tags: []string{fidelityTag}, Limit: 1}).AllPages(r.ctx)
		o.err("error", err)
		if err == nil {
			list, err := loadbalancers.ExtractLoadBalancers(pages)
			o.err("extract", err)
			var names []string
			for _, lb := range list {
				names = append(names, lb.Name)
			}
			slices.Sort(names)
			o["load balancers"] = strings.Join(names, ", ")
		}
	})
	for _, lb := range []*openstack.LoadBalancer{amphora, ovn} {
		r.deleteLB("octavia "+lb.Provider+": delete with cascade", lb.ID)
		r.record("octavia "+lb.Provider+": the VIP port after the delete", false, func(o obs) {
			_, err := r.clients.Neutron.Port(r.ctx, lb.VIPPortID)
			o.err("error", err)
		})
	}
	r.record("octavia: a load balancer that does not exist", true, func(o obs) {
		_, err := r.octavia.GetLoadBalancer(r.ctx, missingLB)
		o.err("error", err)
		o.errorBody("answer", r.last())
	})
}

// children adds a listener, its pool, its member and its monitor in one
// call each, as pkg/loadbalancer does with the OVN provider, each step
// after the load balancer settled, and records the tree they make.
func (r *fidelityRun) children(prefix, lbID, method string) {
	spec := r.listener(method, true)
	r.record(prefix+": a listener without a pool", true, func(o obs) {
		o.err("error", r.octavia.CreateListener(r.ctx, lbID, openstack.ListenerSpec{Name: spec.Name, Protocol: spec.Protocol, Port: spec.Port, ConnLimit: spec.ConnLimit}))
	})
	r.settle(prefix+": the listener settles", lbID, "PENDING_UPDATE")
	tree := func() *openstack.Tree {
		tree, err := r.octavia.Tree(r.ctx, lbID)
		if err != nil || len(tree.Listeners) != 1 {
			r.t.Fatalf("%s: listeners: %v, %v", prefix, tree, err)
		}
		return tree
	}
	r.record(prefix+": its pool", true, func(o obs) {
		pool := spec.Pool
		pool.Members, pool.Monitor = nil, nil
		o.err("error", r.octavia.CreatePool(r.ctx, tree().Listeners[0].ID, pool))
	})
	r.settle(prefix+": the pool settles", lbID, "PENDING_UPDATE")
	r.record(prefix+": its member in one batch", true, func(o obs) {
		o.err("error", r.octavia.SetMembers(r.ctx, tree().Listeners[0].DefaultPoolID, spec.Pool.Members))
	})
	r.settle(prefix+": the member settles", lbID, "PENDING_UPDATE")
	r.record(prefix+": its monitor", true, func(o obs) {
		o.err("error", r.octavia.CreateMonitor(r.ctx, tree().Listeners[0].DefaultPoolID, *spec.Pool.Monitor))
	})
	r.settle(prefix+": the monitor settles", lbID, "PENDING_UPDATE")
	r.tree(prefix+": the tree", lbID)
}

// listener is the scenario's listener on port 80 with a TCP pool of
// method whose one member is server A; withChildren adds the member and a
// TCP monitor.
func (r *fidelityRun) listener(method string, withChildren bool) openstack.ListenerSpec {
	pool := openstack.PoolSpec{Name: "fid-pool", Protocol: "TCP", Method: method}
	if withChildren {
		pool.Members = []openstack.Member{{Name: "fid-a", Address: r.ipA, Port: 30080, SubnetID: r.labSubnet}}
		pool.Monitor = &openstack.MonitorSpec{Name: "fid-monitor", Type: "TCP", Delay: 5, Timeout: 3, MaxRetries: 3, MaxRetriesDown: 3}
	}
	return openstack.ListenerSpec{Name: "fid-listener", Protocol: "TCP", Port: 80, ConnLimit: -1, Pool: pool}
}

// createLB creates a bare load balancer of provider on the lab subnet.
func (r *fidelityRun) createLB(provider string) *openstack.LoadBalancer {
	var lb *openstack.LoadBalancer
	r.record("octavia "+provider+": create a load balancer", true, func(o obs) {
		var err error
		lb, err = r.octavia.CreateLoadBalancer(r.ctx, openstack.Spec{Name: "fid-" + provider, Description: "fidelity",
			Tags: []string{fidelityTag}, VIPSubnetID: r.labSubnet, Provider: provider})
		if err != nil {
			r.t.Fatalf("create %s load balancer: %v", provider, err)
		}
		r.deleteAtEnd(lb.ID)
		r.n.add(lb.ID, "lb-"+provider)
		r.n.add(lb.VIPPortID, "vip-port-"+provider)
		r.n.add(lb.VIPAddress, "vip-"+provider)
		o["lb"] = fmt.Sprintf("status=%s provider=%s vip=%s/%s/%s tags=%v created=%t", lb.ProvisioningStatus, lb.Provider,
			r.n.norm(lb.VIPNetworkID), r.n.norm(lb.VIPSubnetID), r.n.norm(lb.VIPPortID), lb.Tags, !lb.CreatedAt.IsZero())
		o.fields(r.n, "body", decode(r.last().Body), "loadbalancer.provisioning_status", "loadbalancer.operating_status",
			"loadbalancer.admin_state_up", "loadbalancer.listeners", "loadbalancer.pools", "loadbalancer.flavor_id",
			"loadbalancer.availability_zone", "loadbalancer.vip_address", "loadbalancer.additional_vips")
	})
	return lb
}

// settle polls the load balancer until it is no longer PENDING_*, and
// records where it ended and whether it went only through pending (how
// many polls see it depends on the cloud's speed: the OVN provider is
// often done before the first).
func (r *fidelityRun) settle(name, id, pending string) {
	r.record(name, false, func(o obs) {
		seen, err := r.pollLB(id, func(status string) bool { return !strings.HasPrefix(status, "PENDING_") })
		o.err("error", err)
		if len(seen) == 0 {
			return
		}
		o["ends"] = seen[len(seen)-1]
		o["through"] = transitions(seen, pending)
		o.fields(r.n, "body", decode(r.last().Body), "loadbalancer.operating_status")
	})
}

// transitions is "only <pending>" when every status before the last was
// pending, else the whole sequence.
func transitions(seen []string, pending string) string {
	for _, s := range seen[:len(seen)-1] {
		if s != pending {
			return strings.Join(seen, " → ")
		}
	}
	return "only " + pending
}

// pollLB reads the load balancer every 250 ms until done(its status) (a
// 404 is the status "404"), and returns the statuses seen in order.
func (r *fidelityRun) pollLB(id string, done func(string) bool) ([]string, error) {
	var seen []string
	err := wait.PollUntilContextTimeout(r.ctx, 250*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		lb, err := r.octavia.GetLoadBalancer(ctx, id)
		status := ""
		switch {
		case errors.Is(err, openstack.ErrNotFound):
			status = "404"
		case err != nil:
			return false, err
		default:
			status = lb.ProvisioningStatus
		}
		if len(seen) == 0 || seen[len(seen)-1] != status {
			seen = append(seen, status)
		}
		return done(status), nil
	})
	return seen, err
}

func (r *fidelityRun) tree(name, id string) {
	r.record(name, true, func(o obs) {
		tree, err := r.octavia.Tree(r.ctx, id)
		o.err("error", err)
		if tree == nil {
			return
		}
		for i, l := range tree.Listeners {
			o[fmt.Sprintf("listener[%d]", i)] = fmt.Sprintf("%s:%d pool:%t cidrs=%v connlimit=%d timeouts=%+v tags=%v", l.Protocol, l.Port,
				l.DefaultPoolID != "", l.AllowedCIDRs, l.ConnLimit, l.Timeouts, l.Tags)
			r.n.add(l.ID, fmt.Sprintf("listener-%d", i))
		}
		for _, p := range tree.Pools {
			o["pool"] = fmt.Sprintf("%s %s persistence=%q", p.Protocol, p.Method, p.Persistence)
			for i, m := range p.Members {
				o[fmt.Sprintf("pool.member[%d]", i)] = fmt.Sprintf("%s:%d", r.n.norm(m.Address), m.Port)
			}
			if p.Monitor != nil {
				m := p.Monitor
				o["pool.monitor"] = fmt.Sprintf("%s delay=%d timeout=%d retries=%d down=%d", m.Type, m.Delay, m.Timeout, m.MaxRetries, m.MaxRetriesDown)
			}
		}
	})
}

func (r *fidelityRun) vipPort(name, id string) {
	r.record(name, true, func(o obs) {
		p, err := r.clients.Neutron.Port(r.ctx, id)
		o.err("error", err)
		if p != nil {
			o["port"] = fmt.Sprintf("name=%s device=%s network=%s status=%s", r.n.norm(p.Name), r.n.norm(p.DeviceID), r.n.norm(p.NetworkID), p.Status)
		}
		o.fields(r.n, "body", decode(r.last().Body), "port.device_owner", "port.admin_state_up")
	})
}

// deleteLB deletes with cascade and records the statuses until Octavia
// answers 404, and that 404.
func (r *fidelityRun) deleteLB(name, id string) {
	r.record(name, false, func(o obs) {
		o.err("error", r.octavia.DeleteLoadBalancer(r.ctx, id))
		seen, err := r.pollLB(id, func(status string) bool { return status == "404" })
		o.err("poll", err)
		if len(seen) > 0 {
			o["through"] = transitions(seen, "PENDING_DELETE")
		}
		_, err = r.octavia.GetLoadBalancer(r.ctx, id)
		o.err("read after", err)
		o.errorBody("answer", r.last())
	})
}

// deleteAtEnd removes what the scenario made if it stops half-way: the
// real cloud outlives the test.
func (r *fidelityRun) deleteAtEnd(id string) {
	r.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		_ = wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			_ = r.octavia.DeleteLoadBalancer(ctx, id) // 409 while PENDING_*, 404 once gone: the read decides
			_, err := r.octavia.GetLoadBalancer(ctx, id)
			return errors.Is(err, openstack.ErrNotFound), nil
		})
	})
}
