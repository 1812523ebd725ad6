package cloudsim

import (
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

func TestAFloatingIPUpdatedWithANullPortIsDetached(t *testing.T) {
	_, authURL := startSim(t, Options{})
	net := networkClient(t, authURL)
	ctx := ctxT(t)
	pages, err := networks.List(net, networks.ListOpts{Name: "public"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := networks.ExtractNetworks(pages)
	pages, err = networks.List(net, networks.ListOpts{Name: "private"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	priv, _ := networks.ExtractNetworks(pages)
	port, err := ports.Create(ctx, net, ports.CreateOpts{NetworkID: priv[0].ID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	fip, err := floatingips.Create(ctx, net, floatingips.CreateOpts{FloatingNetworkID: pub[0].ID, PortID: port.ID}).Extract()
	if err != nil || fip.PortID != port.ID {
		t.Fatalf("create attached: %+v %v", fip, err)
	}
	t.Run("a description-only update keeps the port", func(t *testing.T) {
		desc := "kept"
		f, err := floatingips.Update(ctx, net, fip.ID, floatingips.UpdateOpts{Description: &desc}).Extract()
		if err != nil || f.PortID != port.ID {
			t.Errorf("after update: port %q, %v", f.PortID, err)
		}
	})
	t.Run("port_id null detaches, as in Neutron", func(t *testing.T) {
		none := "" // gophercloud sends "" as null
		f, err := floatingips.Update(ctx, net, fip.ID, floatingips.UpdateOpts{PortID: &none}).Extract()
		if err != nil || f.PortID != "" {
			t.Errorf("after detach: port %q, %v", f.PortID, err)
		}
	})
}
