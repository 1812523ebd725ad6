package cloudsim

import (
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// Security groups on ports, as the load balancers' security group
// management uses them.
func TestSecurityGroupsOnPorts(t *testing.T) {
	_, authURL := startSim(t, Options{})
	net := networkClient(t, authURL)
	ctx := ctxT(t)
	sg, err := groups.Create(ctx, net, groups.CreateOpts{Name: "lb-sg-x"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	pages, err := ports.List(net, ports.ListOpts{DeviceOwner: "compute:nova"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := ports.ExtractPorts(pages)
	if len(all) < 2 {
		t.Fatalf("seed ports %d, want at least 2", len(all))
	}
	p := all[0]
	withSG := append(slices.Clone(p.SecurityGroups), sg.ID)
	rev := p.RevisionNumber

	t.Run("a port update naming an unknown group is a 404 and changes nothing", func(t *testing.T) {
		bad := append(slices.Clone(p.SecurityGroups), "00000000-0000-0000-0000-000000000000")
		err := ports.Update(ctx, net, p.ID, ports.UpdateOpts{SecurityGroups: &bad}).Err
		if !gophercloud.ResponseCodeIs(err, 404) {
			t.Fatalf("want 404, got %v", err)
		}
	})
	t.Run("a stale revision is a 412", func(t *testing.T) {
		stale := rev - 1
		err := ports.Update(ctx, net, p.ID, ports.UpdateOpts{SecurityGroups: &withSG, RevisionNumber: &stale}).Err
		if !gophercloud.ResponseCodeIs(err, 412) {
			t.Fatalf("want 412, got %v", err)
		}
	})
	t.Run("the current revision adds the group", func(t *testing.T) {
		got, err := ports.Update(ctx, net, p.ID, ports.UpdateOpts{SecurityGroups: &withSG, RevisionNumber: &rev}).Extract()
		if err != nil || !slices.Equal(got.SecurityGroups, withSG) || got.RevisionNumber != rev+1 {
			t.Fatalf("port %+v, %v", got, err)
		}
	})
	t.Run("ports filter on security_groups", func(t *testing.T) {
		pages, err := ports.List(net, ports.ListOpts{SecurityGroups: []string{sg.ID}}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		list, _ := ports.ExtractPorts(pages)
		if len(list) != 1 || list[0].ID != p.ID {
			t.Fatalf("ports with the group %+v, want only %s", list, p.ID)
		}
	})
	t.Run("a group in use cannot be deleted (409)", func(t *testing.T) {
		if err := groups.Delete(ctx, net, sg.ID).ExtractErr(); !gophercloud.ResponseCodeIs(err, 409) {
			t.Fatalf("want 409, got %v", err)
		}
	})
}
