package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

var _ Network = (*gopherNetwork)(nil)

// gopherNetwork is Network on Neutron through gophercloud.
type gopherNetwork struct {
	client *gophercloud.ServiceClient
	caller *Caller
}

// ListPorts returns the ports of one device, following every page.
func (n *gopherNetwork) ListPorts(ctx context.Context, deviceID string) ([]Port, error) {
	var list []Port
	err := n.caller.Do(ctx, ServiceNetwork, "list_ports", func(ctx context.Context) error {
		pages, err := ports.List(n.client, ports.ListOpts{DeviceID: deviceID}).AllPages(ctx)
		if err != nil {
			return err
		}
		list, err = extractPorts(pages)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list ports of device %q: %w", deviceID, err)
	}
	return list, nil
}

// extractPorts converts a page of Neutron ports, with the port binding's
// host when the answer shows it (an administrator's; see Port).
func extractPorts(page pagination.Page) ([]Port, error) {
	list, err := ports.ExtractPorts(page)
	if err != nil {
		return nil, err
	}
	var bindings []struct {
		ID     string  `json:"id"`
		HostID *string `json:"binding:host_id"`
	}
	if err := ports.ExtractPortsInto(page, &bindings); err != nil {
		return nil, err
	}
	out := make([]Port, 0, len(list))
	for i, p := range list {
		port := toPort(p)
		if i < len(bindings) && bindings[i].ID == p.ID && bindings[i].HostID != nil {
			port.BindingHostID, port.BindingHostKnown = *bindings[i].HostID, true
		}
		out = append(out, port)
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
		Status:     p.Status,
	}
	for _, ip := range p.FixedIPs {
		port.FixedIPs = append(port.FixedIPs, FixedIP{SubnetID: ip.SubnetID, IPAddress: ip.IPAddress})
	}
	for _, pair := range p.AllowedAddressPairs {
		port.AllowedAddressPairs = append(port.AllowedAddressPairs, AddressPair{IPAddress: pair.IPAddress, MACAddress: pair.MACAddress})
	}
	return port
}
