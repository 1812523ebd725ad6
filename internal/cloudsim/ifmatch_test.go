package cloudsim

import (
	"net/http"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

func TestIfMatchRevision(t *testing.T) {
	_, authURL := startSim(t, Options{})
	net := networkClient(t, authURL)
	port := listPorts(t, net, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: "10.0.0.11"}}})[0]

	t.Run("a port update at the current revision applies and bumps the revision", func(t *testing.T) {
		rev := port.RevisionNumber
		pairs := []ports.AddressPair{{IPAddress: "10.244.1.0/24", MACAddress: "fa:16:3e:00:00:01"}}
		got, err := ports.Update(ctxT(t), net, port.ID, ports.UpdateOpts{AllowedAddressPairs: &pairs, RevisionNumber: &rev}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if got.RevisionNumber != rev+1 || len(got.AllowedAddressPairs) != 1 || got.AllowedAddressPairs[0].MACAddress != "fa:16:3e:00:00:01" {
			t.Errorf("revision %d (was %d), pairs %+v", got.RevisionNumber, rev, got.AllowedAddressPairs)
		}
	})
	t.Run("a port update at a stale revision is refused with 412 and changes nothing", func(t *testing.T) {
		stale := port.RevisionNumber
		empty := []ports.AddressPair{}
		err := ports.Update(ctxT(t), net, port.ID, ports.UpdateOpts{AllowedAddressPairs: &empty, RevisionNumber: &stale}).Err
		if !gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed) {
			t.Fatalf("err %v, want 412", err)
		}
		now, err := ports.Get(ctxT(t), net, port.ID).Extract()
		if err != nil || len(now.AllowedAddressPairs) != 1 {
			t.Errorf("pairs %+v err %v, want the earlier pair kept", now, err)
		}
	})
	t.Run("a router update at a stale revision is refused with 412", func(t *testing.T) {
		pages, err := routers.List(net, routers.ListOpts{}).AllPages(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		rs, _ := routers.ExtractRouters(pages)
		rt := rs[0]
		name := "renamed"
		rev := rt.RevisionNumber
		if _, err := routers.Update(ctxT(t), net, rt.ID, routers.UpdateOpts{Name: name, RevisionNumber: &rev}).Extract(); err != nil {
			t.Fatalf("update at current revision: %v", err)
		}
		err = routers.Update(ctxT(t), net, rt.ID, routers.UpdateOpts{Name: "again", RevisionNumber: &rev}).Err
		if !gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed) {
			t.Fatalf("err %v, want 412", err)
		}
	})
}
