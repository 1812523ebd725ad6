package framework

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// PortForger is a cloud on which a test can act as a plain member of the
// cluster's project (the CCM's user: member, no admin) and make what such a
// member really can in Neutron.
type PortForger interface {
	// ForgeServerPort creates, as that member, a port on the lab network
	// carrying the server's device_id and device_owner compute:nova (Neutron
	// picks the address), and returns its ID and fixed IP. The port is
	// deleted when the test ends.
	ForgeServerPort(t testing.TB, serverID string) (portID, ip string)
}

var (
	_ PortForger = SimTestCloud{}
	_ PortForger = (*RealCloud)(nil)
)

// ForgeServerPort implements PortForger with the lab's member user.
func (s SimTestCloud) ForgeServerPort(t testing.TB, serverID string) (string, string) {
	t.Helper()
	return forgeServerPort(t, s.SimCloud.AuthURL, "stackward", "lab-password", serverID)
}

// ForgeServerPort implements PortForger with the lab's member user.
func (r *RealCloud) ForgeServerPort(t testing.TB, serverID string) (string, string) {
	t.Helper()
	return forgeServerPort(t, r.Info.AuthURL, "stackward", r.Info.Users["stackward"].Password, serverID)
}

func forgeServerPort(t testing.TB, authURL, user, password, serverID string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	provider, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: authURL, Username: user, Password: password, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: "lab", DomainName: "Default"},
	})
	if err != nil {
		t.Fatalf("authenticate %s at %s: %v", user, authURL, err)
	}
	network, err := openstack.NewNetworkV2(provider, gophercloud.EndpointOpts{Region: LabRegion})
	if err != nil {
		t.Fatalf("network endpoint for %s: %v", user, err)
	}
	pages, err := networks.List(network, networks.ListOpts{Name: LabNetwork}).AllPages(ctx)
	if err != nil {
		t.Fatalf("list network %s as %s: %v", LabNetwork, user, err)
	}
	nets, err := networks.ExtractNetworks(pages)
	if err != nil || len(nets) != 1 {
		t.Fatalf("network %s as %s: %d found, %v", LabNetwork, user, len(nets), err)
	}
	p, err := ports.Create(ctx, network, ports.CreateOpts{
		Name: "forged-" + serverID[:8], NetworkID: nets[0].ID, DeviceID: serverID, DeviceOwner: "compute:nova",
	}).Extract()
	if err != nil {
		t.Fatalf("create a port carrying server %s's device_id as %s: %v", serverID, user, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := ports.Delete(ctx, network, p.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			t.Errorf("delete forged port %s: %v", p.ID, err)
		}
	})
	if len(p.FixedIPs) == 0 {
		t.Fatalf("forged port %s got no fixed IP", p.ID)
	}
	return p.ID, p.FixedIPs[0].IPAddress
}

// AdminPort is how an admin sees a port: status, device owner and binding
// (binding:host_id and vif_type are admin-only).
type AdminPort struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	DeviceOwner string `json:"device_owner"`
	HostID      string `json:"binding:host_id"`
	VIFType     string `json:"binding:vif_type"`
}

func (p AdminPort) String() string {
	return fmt.Sprintf("port %s: status %s, device_owner %s, binding:host_id %q, vif_type %q", p.ID, p.Status, p.DeviceOwner, p.HostID, p.VIFType)
}

// PortAsAdmin reads the port as the lab's operator (an admin).
func (r *RealCloud) PortAsAdmin(t testing.TB, id string) AdminPort {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var p AdminPort
	if err := ports.Get(ctx, r.network, id).ExtractInto(&p); err != nil {
		t.Fatalf("read port %s as admin: %v", id, err)
	}
	return p
}
