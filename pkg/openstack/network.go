package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

var _ Network = (*gopherNetwork)(nil)

// gopherNetwork is Network on Neutron through gophercloud.
type gopherNetwork struct {
	client *gophercloud.ServiceClient
	caller *Caller
}

// ListPorts returns the ports of one device, following every page.
func (n *gopherNetwork) ListPorts(ctx context.Context, deviceID string) ([]Port, error) {
	var list []ports.Port
	err := n.caller.Do(ctx, ServiceNetwork, "list_ports", func(ctx context.Context) error {
		pages, err := ports.List(n.client, ports.ListOpts{DeviceID: deviceID}).AllPages(ctx)
		if err != nil {
			return err
		}
		list, err = ports.ExtractPorts(pages)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list ports of device %q: %w", deviceID, err)
	}
	out := make([]Port, 0, len(list))
	for _, p := range list {
		out = append(out, toPort(p))
	}
	return out, nil
}

func toPort(p ports.Port) Port {
	project := p.ProjectID
	if project == "" {
		project = p.TenantID
	}
	port := Port{
		ID:         p.ID,
		Name:       p.Name,
		NetworkID:  p.NetworkID,
		DeviceID:   p.DeviceID,
		ProjectID:  project,
		MACAddress: p.MACAddress,
	}
	for _, ip := range p.FixedIPs {
		port.FixedIPs = append(port.FixedIPs, FixedIP{SubnetID: ip.SubnetID, IPAddress: ip.IPAddress})
	}
	for _, pair := range p.AllowedAddressPairs {
		port.AllowedAddressPairs = append(port.AllowedAddressPairs, AddressPair{IPAddress: pair.IPAddress, MACAddress: pair.MACAddress})
	}
	return port
}
