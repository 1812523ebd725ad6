package cloudsim

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// Octavia (Zed) checks a vip_port_id before any provider sees it: the
// port must be readable with the caller's token and have no device_id.
// The simulator used to build the load balancer on any port, a server's
// included (and Stackward then moved the node's floating IP to it).
func TestAVIPPortInUseIsRefusedAsOctaviaDoes(t *testing.T) {
	sim, authURL := startSim(t, Options{OctaviaDelay: 20 * time.Millisecond})
	pc := provider(t, demoAuth(authURL))
	lbc, err := openstack.NewLoadBalancerV2(pc, gophercloudRegion())
	if err != nil {
		t.Fatal(err)
	}
	netc, err := openstack.NewNetworkV2(pc, gophercloudRegion())
	if err != nil {
		t.Fatal(err)
	}
	env := lbEnv{sim: sim, lb: lbc, net: netc, subnetID: sim.mustSubnet(t, "private")}
	c := login(t, authURL, "demo", "secret")
	ctx := ctxT(t)
	node, ok := sim.ServerByName("node-1")
	if !ok || len(node.PortIDs) != 1 {
		t.Fatalf("node-1: %+v", node)
	}
	nodePort := node.PortIDs[0]
	createOn := func(portID string) apiReply {
		return c.do("POST", "/load-balancer/v2/lbaas/loadbalancers", map[string]any{"loadbalancer": map[string]any{
			"name": "on-port", "vip_port_id": portID}})
	}
	fault := func(t *testing.T, r apiReply, want string) {
		t.Helper()
		var got map[string]any
		if err := json.Unmarshal([]byte(r.body), &got); err != nil {
			t.Fatalf("answer %d %q: %v", r.code, r.body, err)
		}
		if wantBody := map[string]any{"faultcode": "Client", "faultstring": want, "debuginfo": nil}; r.code != http.StatusBadRequest || !reflect.DeepEqual(got, wantBody) {
			t.Fatalf("answer %d %s, want 400 %v", r.code, r.body, wantBody)
		}
	}
	noLoadBalancerNamed := func(t *testing.T, name string) {
		t.Helper()
		pages, err := loadbalancers.List(env.lb, loadbalancers.ListOpts{Name: name}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if lbs, _ := loadbalancers.ExtractLoadBalancers(pages); len(lbs) != 0 {
			t.Errorf("load balancers %+v, want none", lbs)
		}
	}

	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"a server's port is refused and keeps its server and floating IP", func(t *testing.T) {
			fault(t, createOn(nodePort), "Validation failure: Port "+nodePort+" is already used by device "+node.ID+" ")
			noLoadBalancerNamed(t, "on-port")
			p, err := ports.Get(ctx, env.net, nodePort).Extract()
			if err != nil || p.DeviceID != node.ID || p.DeviceOwner != "compute:nova" {
				t.Errorf("node's port after the refusal: %+v, %v", p, err)
			}
			pages, err := floatingips.List(env.net, floatingips.ListOpts{PortID: nodePort}).AllPages(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if fips, _ := floatingips.ExtractFloatingIPs(pages); len(fips) != 1 {
				t.Errorf("floating IPs on the node's port: %+v, want its one", fips)
			}
		}},
		{"another load balancer's VIP port is refused", func(t *testing.T) {
			other, err := loadbalancers.Create(ctx, env.lb, loadbalancers.CreateOpts{Name: "other", VipSubnetID: env.subnetID}).Extract()
			if err != nil {
				t.Fatal(err)
			}
			fault(t, createOn(other.VipPortID), "Validation failure: Port "+other.VipPortID+" is already used by device lb-"+other.ID+" ")
			noLoadBalancerNamed(t, "on-port")
		}},
		{"a port that does not exist is not found", func(t *testing.T) {
			const missing = "7f0c6c1e-3a0b-4c8e-9d53-52a4e1f0aa02"
			fault(t, createOn(missing), "Port "+missing+" not found.")
		}},
		{"a free port is the VIP, and stays the user's when the load balancer goes", func(t *testing.T) {
			free, err := ports.Create(ctx, env.net, ports.CreateOpts{NetworkID: sim.state.networkRef("private").ID, Name: "my-vip"}).Extract()
			if err != nil {
				t.Fatal(err)
			}
			r := createOn(free.ID)
			if r.code != http.StatusCreated {
				t.Fatalf("create on a free port: %d %s", r.code, r.body)
			}
			lb := jsonOf(t, r.body)["loadbalancer"].(map[string]any)
			id := lb["id"].(string)
			if lb["vip_port_id"] != free.ID || lb["vip_address"] != free.FixedIPs[0].IPAddress {
				t.Errorf("VIP %v %v, want the port's %s %s", lb["vip_port_id"], lb["vip_address"], free.ID, free.FixedIPs[0].IPAddress)
			}
			waitLB(t, env.lb, id, "ACTIVE")
			if err := loadbalancers.Delete(ctx, env.lb, id, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
				t.Fatal(err)
			}
			waitLB(t, env.lb, id, "")
			p, err := ports.Get(ctx, env.net, free.ID).Extract()
			if err != nil || p.DeviceID != "" || p.DeviceOwner != "" {
				t.Errorf("the user's port after the load balancer: %+v, %v", p, err)
			}
		}},
	}
	for _, tc := range tests {
		if !t.Run(tc.name, tc.run) {
			return
		}
	}
}
