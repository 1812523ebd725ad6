package framework

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
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/pkg/loadbalancer"
)

// OtherCluster is what another cluster (same --cluster-name "lab", same
// pod CIDR, another cluster UID) and the operator own on the router and the
// node network this cluster uses too. Its resources must never change.
type OtherCluster struct {
	api                  *CloudAPI
	routerID             string
	serverPort, nodePort string // their node's port; our node's port (operator's VRRP pair)
	lbID, fipID          string
	routes               []routers.Route
}

// OtherClusterOptions place the other cluster.
type OtherClusterOptions struct {
	RouterID string
	// TheirNode is the NodeIP index of their node's server, TheirNode+1 that
	// of an orphan route's next hop.
	TheirNode int
	// OurServerID is a server of this cluster whose port gets the
	// operator's keepalived address pair.
	OurServerID string
	// Service is the Service of ours whose load balancer name theirs takes.
	Service loadbalancer.ServiceRef
}

// NewOtherCluster makes, through the API as the cloud.conf's user, their
// node (a server on the lab network with address pairs), their routes and
// the operator's on the router, the operator's pair on our node's port, and
// their load balancer with our very name, told apart only by their cluster
// UID tag, with a floating IP.
func NewOtherCluster(ctx context.Context, t testing.TB, cloud TestCloud, api *CloudAPI, o OtherClusterOptions) *OtherCluster {
	t.Helper()
	oc := &OtherCluster{api: api, routerID: o.RouterID}
	srv := cloud.CreateServer(t, "their-node", o.TheirNode, "m1.small", "az-1")
	theirIP := NodeIP(o.TheirNode)
	oc.serverPort = api.PortOf(ctx, t, srv.ID)
	// Their node's pod CIDR is inside ours (same default range), and so
	// is an orphan route of theirs whose node is gone.
	pairs := []ports.AddressPair{{IPAddress: "198.19.250.0/24", MACAddress: "fa:16:3e:be:ef:01"}, {IPAddress: "198.18.9.9"}}
	if _, err := ports.Update(ctx, api.Neutron, oc.serverPort, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract(); err != nil {
		t.Fatal(err)
	}
	// The operator's keepalived address on our node's port.
	oc.nodePort = api.PortOf(ctx, t, o.OurServerID)
	vrrp := []ports.AddressPair{{IPAddress: "198.18.200.200", MACAddress: "fa:16:3e:00:00:aa"}}
	if _, err := ports.Update(ctx, api.Neutron, oc.nodePort, ports.UpdateOpts{AllowedAddressPairs: &vrrp}).Extract(); err != nil {
		t.Fatal(err)
	}
	oc.routes = []routers.Route{
		{DestinationCIDR: "198.19.250.0/24", NextHop: theirIP},
		{DestinationCIDR: "198.19.251.0/24", NextHop: NodeIP(o.TheirNode + 1)},
		{DestinationCIDR: "192.0.2.0/24", NextHop: theirIP}, // the operator's
	}
	rs := oc.routes
	if _, err := extraroutes.Add(ctx, api.Neutron, o.RouterID, extraroutes.Opts{Routes: &rs}).Extract(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The real cloud outlives the test: the next test's router starts clean.
		_, _ = extraroutes.Remove(context.Background(), api.Neutron, o.RouterID, extraroutes.Opts{Routes: &rs}).Extract()
	})
	lb, err := loadbalancers.Create(ctx, api.Octavia, loadbalancers.CreateOpts{
		Name: loadbalancer.LoadBalancerName("lab", o.Service), VipSubnetID: api.SubnetID(ctx, t, "lab-v4"),
		Tags: loadbalancer.LoadBalancerTags(loadbalancer.Identity{ClusterName: "lab", ClusterUID: "their-cluster-uid"}, o.Service),
	}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	oc.lbID = lb.ID
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = loadbalancers.Delete(ctx, api.Octavia, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
	})
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		x, err := loadbalancers.Get(ctx, api.Octavia, lb.ID).Extract()
		return err == nil && x.ProvisioningStatus == "ACTIVE", nil
	}); err != nil {
		t.Fatalf("their load balancer never became ACTIVE: %v", err)
	}
	fip, err := floatingips.Create(ctx, api.Neutron, floatingips.CreateOpts{FloatingNetworkID: api.NetworkID(ctx, t, FloatingNetwork), PortID: lb.VipPortID,
		Description: "their-cluster-uid's load balancer"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	oc.fipID = fip.ID
	t.Cleanup(func() { _ = floatingips.Delete(context.Background(), api.Neutron, fip.ID).ExtractErr() })
	return oc
}

// Snapshot is their resources as the API returns them (revision numbers
// and update times included, so any write shows), plus their routes and
// the operator's pair on our node's port.
func (o *OtherCluster) Snapshot(ctx context.Context, t testing.TB) string {
	t.Helper()
	a := o.api
	theirPort := ports.Get(ctx, a.Neutron, o.serverPort)
	lb := loadbalancers.Get(ctx, a.Octavia, o.lbID)
	fip := floatingips.Get(ctx, a.Neutron, o.fipID)
	ours, err := ports.Get(ctx, a.Neutron, o.nodePort).Extract()
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
	for _, r := range a.Routes(ctx, t, o.routerID) {
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

// LoadBalancerID is their load balancer's.
func (o *OtherCluster) LoadBalancerID() string { return o.lbID }

// PortOf is the one port of the server.
func (a *CloudAPI) PortOf(ctx context.Context, t testing.TB, serverID string) string {
	t.Helper()
	ps, err := a.Ports(ctx, ports.ListOpts{DeviceID: serverID})
	if err != nil || len(ps) != 1 {
		t.Fatalf("ports of server %s: %v %v", serverID, ps, err)
	}
	return ps[0].ID
}

// SubnetID is the ID of the subnet named name.
func (a *CloudAPI) SubnetID(ctx context.Context, t testing.TB, name string) string {
	t.Helper()
	pages, err := subnets.List(a.Neutron, subnets.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := subnets.ExtractSubnets(pages)
	if err != nil || len(ss) != 1 {
		t.Fatalf("subnet %s: %v %v", name, ss, err)
	}
	return ss[0].ID
}
