package openstack

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

func toFloatingIP(f floatingips.FloatingIP) FloatingIP {
	project := f.ProjectID
	if project == "" {
		project = f.TenantID
	}
	return FloatingIP{ID: f.ID, Address: f.FloatingIP, PortID: f.PortID, FixedIPAddress: f.FixedIP, ProjectID: project,
		NetworkID: f.FloatingNetworkID, Description: f.Description}
}

// listFloatingIPs is the one floating IP listing; op keeps the metric label
// each caller has always had.
func (n *Neutron) listFloatingIPs(ctx context.Context, op string, opts floatingips.ListOptsBuilder) ([]FloatingIP, error) {
	list, err := listAll(ctx, n.caller, ServiceNetwork, op,
		func() pagination.Pager { return floatingips.List(n.client, opts) }, floatingips.ExtractFloatingIPs)
	if err != nil {
		return nil, err
	}
	out := make([]FloatingIP, 0, len(list))
	for _, f := range list {
		out = append(out, toFloatingIP(f))
	}
	return out, nil
}

// FloatingIPs lists the floating IPs attached to portID or, with portID
// empty, those with the address. Neither would list every floating IP of
// the project: refused.
func (n *Neutron) FloatingIPs(ctx context.Context, portID, address string) ([]FloatingIP, error) {
	if portID == "" && address == "" {
		return nil, fmt.Errorf("list floating IPs: neither a port nor an address to filter on")
	}
	return n.listFloatingIPs(ctx, "list_floatingips", floatingips.ListOpts{PortID: portID, FloatingIP: address})
}

// CreateFloatingIP allocates a floating IP from fip's network (and subnet
// or address, if set), attached to fip's port if set. It is tried once
// (operations.go): Neutron refuses a second floating IP for the same fixed
// IP, and the load balancer's next reconcile finds the first.
func (n *Neutron) CreateFloatingIP(ctx context.Context, fip FloatingIP) (*FloatingIP, error) {
	opts := floatingips.CreateOpts{FloatingNetworkID: fip.NetworkID, SubnetID: fip.SubnetID, FloatingIP: fip.Address,
		PortID: fip.PortID, Description: fip.Description}
	var f *floatingips.FloatingIP
	err := n.do(ctx, "create_floatingip", func(ctx context.Context) error {
		var err error
		f, err = floatingips.Create(ctx, n.client, opts).Extract()
		return err
	})
	if err != nil {
		return nil, err
	}
	out := toFloatingIP(*f)
	return &out, nil
}

// AttachFloatingIP points a floating IP at a port; "" detaches it.
func (n *Neutron) AttachFloatingIP(ctx context.Context, id, portID string) error {
	return n.do(ctx, "update_floatingip", func(ctx context.Context) error {
		return floatingips.Update(ctx, n.client, id, floatingips.UpdateOpts{PortID: &portID}).Err
	})
}

// DeleteFloatingIP releases a floating IP; one that is gone already is
// what we wanted.
func (n *Neutron) DeleteFloatingIP(ctx context.Context, id string) error {
	return n.do(ctx, "delete_floatingip", func(ctx context.Context) error {
		err := floatingips.Delete(ctx, n.client, id).ExtractErr()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil
		}
		return err
	})
}
