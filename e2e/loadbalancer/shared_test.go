//go:build e2e

package loadbalancer

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// Another cluster (same --cluster-name, same pod CIDR) and the operator
// share the router and the node network with this one. Everything of
// theirs must stay exactly as it was, byte for byte, through this
// cluster's route and load balancer work, a node going away and a CCM
// restart.
func TestASecondClusterOnTheSameRouterAndNetworkIsNeverTouched(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const clusterCIDR = "198.19.128.0/17"
	l := newLab(ctx, t, framework.CloudOptions{}, "[Route]\nrouter-id = %s\n",
		[]string{"--allocate-node-cidrs", "--configure-cloud-routes", "--cluster-cidr=" + clusterCIDR, "--route-reconciliation-period=2s"},
		"sh", 110, 2)
	cp, api := l.cp, l.api
	routerID := api.routerID(ctx, t)
	other := newOtherCluster(ctx, t, l, routerID)
	before := other.snapshot(ctx, t)

	podCIDRs := map[string]string{}
	for name := range l.nodes {
		n, err := cp.WaitForNode(ctx, name, 60*time.Second, func(n *corev1.Node) bool { return n.Spec.PodCIDR != "" })
		if err != nil {
			t.Fatal(err)
		}
		podCIDRs[name] = n.Spec.PodCIDR
	}
	hasRoute := func(cidr, hop string) bool {
		return slices.Contains(api.routes(ctx, t, routerID), routers.Route{DestinationCIDR: cidr, NextHop: hop})
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: %v; routes %v", what, err, api.routes(ctx, t, routerID))
		}
	}
	unchanged := func(when string) {
		t.Helper()
		if after := other.snapshot(ctx, t); after != before {
			t.Errorf("%s, the other cluster's and the operator's resources changed:\nbefore %s\nafter  %s", when, before, after)
		}
	}

	waitFor("our routes", func() bool {
		for name, cidr := range podCIDRs {
			if !hasRoute(cidr, l.ips[name]) {
				return false
			}
		}
		return true
	})
	createNamespace(ctx, t, cp, "shared")
	t.Cleanup(func() { dropServices(t, cp, "shared") })
	if _, err := cp.Admin.CoreV1().Services("shared").Create(ctx, lbService("shared", "web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitIngress(ctx, t, cp, "shared", "web", 2*time.Minute)
	unchanged("with our routes and load balancer in place")

	gone, ip := "sh-2", l.ips["sh-2"]
	l.removeNode(ctx, t, gone)
	waitFor("the removed node's route goes", func() bool { return !hasRoute(podCIDRs[gone], ip) })
	unchanged("after our node's route was removed")

	// A restart (as a leader change): ownership is read back, not guessed.
	l.stop()
	startCCM(ctx, t, cp, l.conf, l.args...)
	time.Sleep(6 * time.Second) // three route reconciliations: nothing may change
	if !hasRoute(podCIDRs["sh-1"], l.ips["sh-1"]) {
		t.Error("our remaining route went after the restart")
	}
	if err := cp.Admin.CoreV1().Services("shared").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitTree(ctx, t, api, 2*time.Minute, "only the other cluster's load balancer left", func(st *octaviaState) bool { return st.N == 1 })
	unchanged("after a CCM restart and our Service's deletion")
}

// otherCluster is what another cluster and the operator own on the shared
// router and network.
type otherCluster struct {
	api                  *cloudAPI
	routerID             string
	serverPort, nodePort string // their node's port; our node's port (operator's VRRP pair)
	lbID, fipID          string
	routes               []routers.Route
}

func newOtherCluster(ctx context.Context, t *testing.T, l *lab, routerID string) *otherCluster {
	t.Helper()
	api := l.api
	o := &otherCluster{api: api, routerID: routerID}
	srv := l.cloud.CreateServer(t, "their-node", 150, "m1.small", "az-1")
	theirIP := framework.NodeIP(150)
	o.serverPort = portOf(ctx, t, api, srv.ID)
	// Their node's pod CIDR is inside ours (same default range), and so
	// is an orphan route of theirs whose node is gone.
	pairs := []ports.AddressPair{{IPAddress: "198.19.250.0/24", MACAddress: "fa:16:3e:be:ef:01"}, {IPAddress: "198.18.9.9"}}
	if _, err := ports.Update(ctx, api.neutron, o.serverPort, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract(); err != nil {
		t.Fatal(err)
	}
	// The operator's keepalived address on our first node's port.
	ourServer, ok := l.cloud.Sim.ServerByName("sh-1")
	if !ok {
		t.Fatal("no server sh-1")
	}
	o.nodePort = portOf(ctx, t, api, ourServer.ID)
	vrrp := []ports.AddressPair{{IPAddress: "198.18.200.200", MACAddress: "fa:16:3e:00:00:aa"}}
	if _, err := ports.Update(ctx, api.neutron, o.nodePort, ports.UpdateOpts{AllowedAddressPairs: &vrrp}).Extract(); err != nil {
		t.Fatal(err)
	}
	o.routes = []routers.Route{
		{DestinationCIDR: "198.19.250.0/24", NextHop: theirIP},
		{DestinationCIDR: "198.19.251.0/24", NextHop: framework.NodeIP(151)},
		{DestinationCIDR: "192.0.2.0/24", NextHop: theirIP}, // the operator's
	}
	rs := o.routes
	if _, err := extraroutes.Add(ctx, api.neutron, routerID, extraroutes.Opts{Routes: &rs}).Extract(); err != nil {
		t.Fatal(err)
	}
	// Their load balancer, with our very name (same --cluster-name and
	// Service), told apart only by their cluster UID tag, and its address.
	subnetID := labSubnet(ctx, t, api)
	lb, err := loadbalancers.Create(ctx, api.octavia, loadbalancers.CreateOpts{
		Name: loadbalancer.LoadBalancerName("lab", loadbalancer.ServiceRef{Namespace: "shared", Name: "web"}), VipSubnetID: subnetID,
		Tags: loadbalancer.LoadBalancerTags(loadbalancer.Identity{ClusterName: "lab", ClusterUID: "their-cluster-uid"}, loadbalancer.ServiceRef{Namespace: "shared", Name: "web"}),
	}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	o.lbID = lb.ID
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		x, err := loadbalancers.Get(ctx, api.octavia, lb.ID).Extract()
		return err == nil && x.ProvisioningStatus == "ACTIVE", nil
	}); err != nil {
		t.Fatalf("their load balancer never became ACTIVE: %v", err)
	}
	fip, err := floatingips.Create(ctx, api.neutron, floatingips.CreateOpts{FloatingNetworkID: publicNetwork(ctx, t, api), PortID: lb.VipPortID,
		Description: "their-cluster-uid's load balancer"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	o.fipID = fip.ID
	return o
}

// snapshot is their resources as the API returns them (revision numbers
// and update times included, so any write shows), plus their routes and
// the operator's pair on our node's port.
func (o *otherCluster) snapshot(ctx context.Context, t *testing.T) string {
	t.Helper()
	a := o.api
	theirPort := ports.Get(ctx, a.neutron, o.serverPort)
	lb := loadbalancers.Get(ctx, a.octavia, o.lbID)
	fip := floatingips.Get(ctx, a.neutron, o.fipID)
	ours, err := ports.Get(ctx, a.neutron, o.nodePort).Extract()
	for _, err := range []error{theirPort.Err, lb.Err, fip.Err, err} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var operatorPairs []ports.AddressPair
	for _, p := range ours.AllowedAddressPairs {
		if p.IPAddress == "198.18.200.200" {
			operatorPairs = append(operatorPairs, p)
		}
	}
	var routes []routers.Route
	for _, r := range a.routes(ctx, t, o.routerID) {
		if slices.Contains(o.routes, r) {
			routes = append(routes, r)
		}
	}
	b, err := json.Marshal(map[string]any{"port": theirPort.Body, "lb": lb.Body, "fip": fip.Body, "operatorPairs": operatorPairs, "routes": routes})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func portOf(ctx context.Context, t *testing.T, a *cloudAPI, serverID string) string {
	t.Helper()
	pages, err := ports.List(a.neutron, ports.ListOpts{DeviceID: serverID}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ports.ExtractPorts(pages)
	if err != nil || len(ps) != 1 {
		t.Fatalf("ports of server %s: %v %v", serverID, ps, err)
	}
	return ps[0].ID
}

func labSubnet(ctx context.Context, t *testing.T, a *cloudAPI) string {
	t.Helper()
	pages, err := subnets.List(a.neutron, subnets.ListOpts{Name: "lab-v4"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := subnets.ExtractSubnets(pages)
	if err != nil || len(ss) != 1 {
		t.Fatalf("subnet lab-v4: %v %v", ss, err)
	}
	return ss[0].ID
}

func publicNetwork(ctx context.Context, t *testing.T, a *cloudAPI) string {
	t.Helper()
	return a.NetworkID(ctx, t, framework.FloatingNetwork)
}
