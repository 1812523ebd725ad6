package cloudsim

import (
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
)

// A listener created beside a health monitor of its protocol leaves an
// OVN-provider load balancer PENDING_UPDATE for good, as
// ovn-octavia-provider 3.0.0 does on the real services; nothing else does.
func TestOVNListenerBesideAMonitor(t *testing.T) {
	const delay = 20 * time.Millisecond
	env := newLBEnv(t, Options{OctaviaDelay: delay})
	for _, tc := range []struct {
		name      string
		provider  string
		nested    bool // the monitor comes in the single-call create
		protocol  listeners.Protocol
		wantStuck bool
	}{
		{"ovn: a TCP listener beside a TCP monitor wedges the load balancer", "ovn", false, listeners.ProtocolTCP, true},
		{"ovn: a UDP listener beside a TCP monitor is created (another OVN row)", "ovn", false, listeners.ProtocolUDP, false},
		{"ovn: a TCP listener beside a monitor of the single-call create is created (the driver never read that one)", "ovn", true, listeners.ProtocolTCP, false},
		{"amphora: a TCP listener beside a TCP monitor is created", "amphora", false, listeners.ProtocolTCP, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			opts := fullLBOpts(env.subnetID, "10.0.0.11")
			opts.Provider = tc.provider
			pool := opts.Listeners[0].DefaultPool
			pool.LBMethod = pools.LBMethodSourceIpPort
			if !tc.nested {
				pool.Monitor = nil
			}
			lb, err := loadbalancers.Create(ctx, env.lb, opts).Extract()
			if err != nil {
				t.Fatal(err)
			}
			full := waitLB(t, env.lb, lb.ID, "ACTIVE")
			if !tc.nested {
				if _, err := monitors.Create(ctx, env.lb, monitors.CreateOpts{PoolID: full.Pools[0].ID, Type: monitors.TypeTCP, Delay: 5, Timeout: 3, MaxRetries: 2}).Extract(); err != nil {
					t.Fatal(err)
				}
				waitLB(t, env.lb, lb.ID, "ACTIVE")
			}
			// A pool create beside the monitor is fine on every provider.
			if _, err := pools.Create(ctx, env.lb, pools.CreateOpts{LoadbalancerID: lb.ID, Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodSourceIpPort}).Extract(); err != nil {
				t.Fatal(err)
			}
			waitLB(t, env.lb, lb.ID, "ACTIVE")

			l, err := listeners.Create(ctx, env.lb, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: tc.protocol, ProtocolPort: 8080}).Extract()
			if err != nil {
				t.Fatal(err)
			}
			if !tc.wantStuck {
				waitLB(t, env.lb, lb.ID, "ACTIVE")
				return
			}
			time.Sleep(20 * delay) // many times what any change takes
			got, err := loadbalancers.Get(ctx, env.lb, lb.ID).Extract()
			if err != nil {
				t.Fatal(err)
			}
			if got.ProvisioningStatus != "PENDING_UPDATE" {
				t.Fatalf("load balancer is %s, want PENDING_UPDATE for good", got.ProvisioningStatus)
			}
			gl, err := listeners.Get(ctx, env.lb, l.ID).Extract()
			if err != nil {
				t.Fatal(err)
			}
			if gl.ProvisioningStatus != "PENDING_CREATE" {
				t.Errorf("listener is %s, want PENDING_CREATE for good", gl.ProvisioningStatus)
			}
			err = loadbalancers.Delete(ctx, env.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
			if !gophercloud.ResponseCodeIs(err, 409) {
				t.Errorf("delete of the wedged load balancer: %v, want 409 (immutable)", err)
			}
		})
	}
}

// Deleting an OVN-provider monitor reports the first pool (by ID) of its
// protocol ACTIVE, not the monitor's: any other pool stays PENDING_UPDATE
// for good, as with ovn-octavia-provider 3.0.0 on the real services.
func TestOVNMonitorDeleteStrandsAPoolThatIsNotTheFirst(t *testing.T) {
	const delay = 20 * time.Millisecond
	env := newLBEnv(t, Options{OctaviaDelay: delay})
	ctx := ctxT(t)
	opts := fullLBOpts(env.subnetID, "10.0.0.11")
	opts.Provider = "ovn"
	opts.Listeners[0].DefaultPool.LBMethod = pools.LBMethodSourceIpPort
	opts.Listeners[0].DefaultPool.Monitor = nil
	lb, err := loadbalancers.Create(ctx, env.lb, opts).Extract()
	if err != nil {
		t.Fatal(err)
	}
	waitLB(t, env.lb, lb.ID, "ACTIVE")
	l, err := listeners.Create(ctx, env.lb, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTCP, ProtocolPort: 81}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	waitLB(t, env.lb, lb.ID, "ACTIVE")
	if _, err := pools.Create(ctx, env.lb, pools.CreateOpts{ListenerID: l.ID, Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodSourceIpPort}).Extract(); err != nil {
		t.Fatal(err)
	}
	full := waitLB(t, env.lb, lb.ID, "ACTIVE")
	var ids []string
	hms := map[string]string{}
	for _, p := range full.Pools {
		ids = append(ids, p.ID)
		hm, err := monitors.Create(ctx, env.lb, monitors.CreateOpts{PoolID: p.ID, Type: monitors.TypeTCP, Delay: 5, Timeout: 3, MaxRetries: 2}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		hms[p.ID] = hm.ID
		waitLB(t, env.lb, lb.ID, "ACTIVE")
	}
	if len(ids) != 2 {
		t.Fatalf("pools %v", ids)
	}
	first, other := min(ids[0], ids[1]), max(ids[0], ids[1])
	for _, tc := range []struct {
		name, pool, want string
	}{
		{"the monitor of the pool that is not the first: its pool stays PENDING_UPDATE", other, "PENDING_UPDATE"},
		{"the monitor of the first pool: its pool goes ACTIVE", first, "ACTIVE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := monitors.Delete(ctx, env.lb, hms[tc.pool]).ExtractErr(); err != nil {
				t.Fatal(err)
			}
			waitLB(t, env.lb, lb.ID, "ACTIVE")
			time.Sleep(10 * delay)
			p, err := pools.Get(ctx, env.lb, tc.pool).Extract()
			if err != nil {
				t.Fatal(err)
			}
			if p.ProvisioningStatus != tc.want {
				t.Errorf("pool is %s, want %s", p.ProvisioningStatus, tc.want)
			}
		})
	}
}
