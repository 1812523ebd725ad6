package cloudsim

import (
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// The ovn provider answers as Octavia does with ovn-octavia-provider
// 3.0.0: 501 with the driver's message, and nothing created.
func TestOVNProviderRefusals(t *testing.T) {
	env := newLBEnv(t, Options{OctaviaDelay: 20 * time.Millisecond})
	ovnOpts := func(mut func(*loadbalancers.CreateOpts)) loadbalancers.CreateOpts {
		o := fullLBOpts(env.subnetID, "10.0.0.11")
		o.Provider = "ovn"
		o.Listeners[0].DefaultPool.LBMethod = pools.LBMethodSourceIpPort
		mut(&o)
		return o
	}
	pool := func(o *loadbalancers.CreateOpts) *pools.CreateOpts { return o.Listeners[0].DefaultPool }
	for _, tc := range []struct {
		name string
		mut  func(*loadbalancers.CreateOpts)
		want string // "" accepted
	}{
		{"TCP with SOURCE_IP_PORT and a TCP monitor is accepted", func(*loadbalancers.CreateOpts) {}, ""},
		{"ROUND_ROBIN is refused", func(o *loadbalancers.CreateOpts) { pool(o).LBMethod = pools.LBMethodRoundRobin },
			"OVN provider does not support ROUND_ROBIN algorithm"},
		{"an HTTP listener is refused", func(o *loadbalancers.CreateOpts) {
			o.Listeners[0].Protocol = listeners.ProtocolHTTP
			pool(o).Protocol = pools.ProtocolHTTP
		}, "OVN provider does not support HTTP protocol"},
		{"a PROXY pool is refused", func(o *loadbalancers.CreateOpts) { pool(o).Protocol = pools.ProtocolPROXY },
			"OVN provider does not support PROXY protocol"},
		{"allowed_cidrs are refused", func(o *loadbalancers.CreateOpts) { o.Listeners[0].AllowedCIDRs = []string{"192.0.2.0/24"} },
			"OVN provider does not support allowed_cidrs option"},
		{"a member monitor port is refused", func(o *loadbalancers.CreateOpts) {
			port := 32000
			pool(o).Members[0].MonitorPort = &port
		}, "OVN Load Balancer does not support different member monitor address or port."},
		{"an HTTP monitor in a single-call create is accepted: the driver never reads it", func(o *loadbalancers.CreateOpts) {
			pool(o).Monitor = &monitors.CreateOpts{Type: monitors.TypeHTTP, Delay: 5, Timeout: 3, MaxRetries: 2, URLPath: "/healthz"}
		}, ""},
		{"timeouts are accepted (and not applied by the provider)", func(o *loadbalancers.CreateOpts) {
			ms := 60000
			o.Listeners[0].TimeoutClientData = &ms
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lb, err := loadbalancers.Create(ctxT(t), env.lb, ovnOpts(tc.mut)).Extract()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				waitLB(t, env.lb, lb.ID, "ACTIVE")
				vip, err := ports.Get(ctxT(t), env.net, lb.VipPortID).Extract()
				if err != nil || vip.Name != "ovn-lb-vip-"+lb.ID || vip.DeviceOwner != "" || vip.DeviceID != "" {
					t.Errorf("VIP port %+v, %v: want the OVN provider's own (ovn-lb-vip-<id>, no device owner)", vip, err)
				}
				if err := loadbalancers.Delete(ctxT(t), env.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
					t.Fatal(err)
				}
				waitLB(t, env.lb, lb.ID, "")
				return
			}
			if !gophercloud.ResponseCodeIs(err, 501) {
				t.Fatalf("create: %v, want 501", err)
			}
			want := `"faultstring":"Provider 'ovn' does not support a requested option: ` + tc.want + `"`
			// WSME's body for a server-side (5xx) error, as Octavia sends it.
			for _, part := range []string{want, `"faultcode":"Server"`, `"debuginfo":null`} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %v\nwant body with %s", err, part)
				}
			}
			page, err := loadbalancers.List(env.lb, loadbalancers.ListOpts{}).AllPages(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			if all, _ := loadbalancers.ExtractLoadBalancers(page); len(all) != 0 {
				t.Errorf("a refused create left %d load balancers", len(all))
			}
		})
	}

	t.Run("an HTTP monitor is refused, naming the supported types", func(t *testing.T) {
		lb, err := loadbalancers.Create(ctxT(t), env.lb, ovnOpts(func(o *loadbalancers.CreateOpts) { pool(o).Monitor = nil })).Extract()
		if err != nil {
			t.Fatal(err)
		}
		waitLB(t, env.lb, lb.ID, "ACTIVE")
		full, err := loadbalancers.Get(ctxT(t), env.lb, lb.ID).Extract()
		if err != nil || len(full.Pools) != 1 {
			t.Fatalf("load balancer %+v, %v", full, err)
		}
		_, err = monitors.Create(ctxT(t), env.lb, monitors.CreateOpts{PoolID: full.Pools[0].ID, Type: monitors.TypeHTTP, Delay: 5, Timeout: 3, MaxRetries: 2, URLPath: "/healthz"}).Extract()
		want := "Provider 'ovn' does not support a requested option: OVN provider does not support HTTP health monitor type. Supported types: UDP-CONNECT, TCP"
		if !gophercloud.ResponseCodeIs(err, 501) || !strings.Contains(err.Error(), want) {
			t.Errorf("HTTP monitor: %v, want 501 %q", err, want)
		}
		_, err = pools.Create(ctxT(t), env.lb, pools.CreateOpts{LoadbalancerID: lb.ID, Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin}).Extract()
		if want := "OVN provider does not support ROUND_ROBIN algorithm"; !gophercloud.ResponseCodeIs(err, 501) || !strings.Contains(err.Error(), want) {
			t.Errorf("ROUND_ROBIN pool: %v, want 501 %q", err, want)
		}
		port := 32000
		err = pools.BatchUpdateMembers(ctxT(t), env.lb, full.Pools[0].ID, []pools.BatchUpdateMemberOpts{{Address: "10.0.0.12", ProtocolPort: 30080, MonitorPort: &port}}).ExtractErr()
		if !gophercloud.ResponseCodeIs(err, 501) || !strings.Contains(err.Error(), "OVN provider does not support monitor options, so following members skipped") {
			t.Errorf("batch with a monitor port: %v, want 501", err)
		}
	})
}
