package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

var _ Network = (*Neutron)(nil)

// Neutron is every Neutron call Stackward makes (ports, floating IPs,
// networks, subnets, routers, security groups) through gophercloud, each
// through the Caller. The CCM's routes and load balancers and the approver
// each consume it through their own narrow interface.
type Neutron struct {
	client *gophercloud.ServiceClient
	caller *Caller
}

// ListPorts returns the ports of one device, following every page.
func (n *Neutron) ListPorts(ctx context.Context, deviceID string) ([]Port, error) {
	out, err := n.listPorts(ctx, ports.ListOpts{DeviceID: deviceID})
	if err != nil {
		return nil, fmt.Errorf("list ports of device %q: %w", deviceID, err)
	}
	return out, nil
}

func toPort(p ports.Port) Port {
	project := p.ProjectID
	if project == "" {
		project = p.TenantID
	}
	port := Port{
		ID:          p.ID,
		Name:        p.Name,
		NetworkID:   p.NetworkID,
		DeviceID:    p.DeviceID,
		DeviceOwner: p.DeviceOwner,
		ProjectID:   project,
		MACAddress:  p.MACAddress,
		Status:      p.Status,
	}
	for _, ip := range p.FixedIPs {
		port.FixedIPs = append(port.FixedIPs, FixedIP{SubnetID: ip.SubnetID, IPAddress: ip.IPAddress})
	}
	for _, pair := range p.AllowedAddressPairs {
		port.AllowedAddressPairs = append(port.AllowedAddressPairs, AddressPair{IPAddress: pair.IPAddress, MACAddress: pair.MACAddress})
	}
	return port
}
