package framework

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/trunks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

// Trunker is a cloud on which a test can, as a plain member of the
// cluster's project, give a server a second network on a VLAN subport: a
// trunk on the server's port carrying a port of another network.
type Trunker interface {
	// AddVLANSubport makes, as that member, a network with subnet cidr, a
	// port on it, and a trunk on the server's port with that port as VLAN
	// vlan's subport. It returns the subport's ID and fixed IP, and the
	// trunk as Neutron answered its creation (JSON). All of it is deleted
	// when the test ends, before the server.
	AddVLANSubport(t testing.TB, serverID, cidr string, vlan int) (portID, ip string, trunkJSON []byte)
}

var (
	_ Trunker = SimTestCloud{}
	_ Trunker = (*RealCloud)(nil)
)

// AddVLANSubport implements Trunker with the lab's member user.
func (s SimTestCloud) AddVLANSubport(t testing.TB, serverID, cidr string, vlan int) (string, string, []byte) {
	t.Helper()
	return addVLANSubport(t, s.SimCloud.AuthURL, "stackward", "lab-password", serverID, cidr, vlan)
}

// AddVLANSubport implements Trunker with the lab's member user.
func (r *RealCloud) AddVLANSubport(t testing.TB, serverID, cidr string, vlan int) (string, string, []byte) {
	t.Helper()
	return addVLANSubport(t, r.Info.AuthURL, "stackward", r.Info.Users["stackward"].Password, serverID, cidr, vlan)
}

func addVLANSubport(t testing.TB, authURL, user, password, serverID, cidr string, vlan int) (string, string, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	provider, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: authURL, Username: user, Password: password, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: "lab", DomainName: "Default"},
	})
	if err != nil {
		t.Fatalf("authenticate %s at %s: %v", user, authURL, err)
	}
	client, err := openstack.NewNetworkV2(provider, gophercloud.EndpointOpts{Region: LabRegion})
	if err != nil {
		t.Fatalf("network endpoint for %s: %v", user, err)
	}
	cleanup := func(what string, del func(context.Context) error) {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := del(ctx); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
				t.Errorf("delete %s: %v", what, err)
			}
		})
	}
	parents, err := ports.List(client, ports.ListOpts{DeviceID: serverID}).AllPages(ctx)
	if err != nil {
		t.Fatalf("ports of server %s as %s: %v", serverID, user, err)
	}
	list, err := ports.ExtractPorts(parents)
	if err != nil || len(list) != 1 {
		t.Fatalf("server %s's port as %s: %d found, %v", serverID, user, len(list), err)
	}
	name := "vlan-" + serverID[:8]
	nw, err := networks.Create(ctx, client, networks.CreateOpts{Name: name}).Extract()
	if err != nil {
		t.Fatalf("create network %s: %v", name, err)
	}
	cleanup("network "+nw.ID, func(ctx context.Context) error { return networks.Delete(ctx, client, nw.ID).ExtractErr() })
	if _, err := subnets.Create(ctx, client, subnets.CreateOpts{NetworkID: nw.ID, Name: name, CIDR: cidr, IPVersion: gophercloud.IPv4}).Extract(); err != nil {
		t.Fatalf("create subnet %s on %s: %v", cidr, name, err)
	}
	// The network's deletion takes its subnet.
	sub, err := ports.Create(ctx, client, ports.CreateOpts{Name: name + "-subport", NetworkID: nw.ID}).Extract()
	if err != nil {
		t.Fatalf("create the subport on %s: %v", name, err)
	}
	cleanup("port "+sub.ID, func(ctx context.Context) error { return ports.Delete(ctx, client, sub.ID).ExtractErr() })
	if len(sub.FixedIPs) == 0 {
		t.Fatalf("subport %s got no fixed IP", sub.ID)
	}
	res := trunks.Create(ctx, client, trunks.CreateOpts{Name: name, PortID: list[0].ID, Subports: []trunks.Subport{
		{PortID: sub.ID, SegmentationType: "vlan", SegmentationID: vlan}}})
	tr, err := res.Extract()
	if err != nil {
		t.Fatalf("create a trunk on server %s's port %s with subport %s as %s: %v", serverID, list[0].ID, sub.ID, user, err)
	}
	cleanup("trunk "+tr.ID, func(ctx context.Context) error { return trunks.Delete(ctx, client, tr.ID).ExtractErr() })
	raw, err := json.Marshal(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return sub.ID, sub.FixedIPs[0].IPAddress, raw
}
