package cloudsim

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
)

// Only a load balancer create takes a graph: real Octavia 11 answers a
// listener create with a nested default_pool (seen in e2e/realcloud), and
// a pool create with nested members or a monitor (the same code path), with
// 500 and creates nothing; the same objects one per call are accepted.
func TestNestedChildrenOutsideALoadBalancerCreateAreRefused(t *testing.T) {
	env := newLBEnv(t, Options{OctaviaDelay: 20 * time.Millisecond})
	lb, err := loadbalancers.Create(ctxT(t), env.lb, loadbalancers.CreateOpts{Name: "bare", VipSubnetID: env.subnetID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	waitLB(t, env.lb, lb.ID, "ACTIVE")
	member := []pools.CreateMemberOpts{{Address: "10.0.0.11", ProtocolPort: 30080}}
	monitor := &monitors.CreateOpts{Type: monitors.TypeTCP, Delay: 5, Timeout: 3, MaxRetries: 2}
	refused := func(t *testing.T, err error) {
		t.Helper()
		if !gophercloud.ResponseCodeIs(err, http.StatusInternalServerError) || !strings.Contains(err.Error(), "_sa_instance_state") {
			t.Fatalf("got %v, want Octavia's 500 '_sa_instance_state'", err)
		}
	}

	t.Run("a listener with a nested default pool is refused and not created", func(t *testing.T) {
		_, err := listeners.Create(ctxT(t), env.lb, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTCP, ProtocolPort: 80,
			DefaultPool: &pools.CreateOpts{Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin}}).Extract()
		refused(t, err)
		pages, err := listeners.List(env.lb, listeners.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if ls, _ := listeners.ExtractListeners(pages); len(ls) != 0 {
			t.Errorf("listeners created: %v", ls)
		}
	})

	var listenerID string
	t.Run("a bare listener is accepted", func(t *testing.T) {
		l, err := listeners.Create(ctxT(t), env.lb, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTCP, ProtocolPort: 80}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		listenerID = l.ID
		waitLB(t, env.lb, lb.ID, "ACTIVE")
	})

	for _, tc := range []struct {
		name string
		opts pools.CreateOpts
	}{
		{"a pool with nested members is refused", pools.CreateOpts{Members: member}},
		{"a pool with a nested monitor is refused", pools.CreateOpts{Monitor: monitor}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.ListenerID, tc.opts.Protocol, tc.opts.LBMethod = listenerID, pools.ProtocolTCP, pools.LBMethodRoundRobin
			_, err := pools.Create(ctxT(t), env.lb, tc.opts).Extract()
			refused(t, err)
		})
	}

	t.Run("a bare pool is accepted", func(t *testing.T) {
		if _, err := pools.Create(ctxT(t), env.lb, pools.CreateOpts{ListenerID: listenerID, Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin}).Extract(); err != nil {
			t.Fatal(err)
		}
	})
}
