package openstack

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsecurity"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

func (n *Neutron) do(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return n.caller.Do(ctx, ServiceNetwork, op, fn)
}

// portJSON is a port with the port-security extension's field.
type portJSON struct {
	ports.Port
	portsecurity.PortSecurityExt
	PortBindingExt
}

// PortBindingExt decodes the port binding's host, which Neutron's default
// policy shows to administrators only (see Port.BindingHostKnown): a pointer,
// so that absent and empty differ. Exported only because gophercloud's
// extraction fills embedded structs through reflection.
type PortBindingExt struct {
	HostID *string `json:"binding:host_id"`
}

func fromPortJSON(p portJSON) Port {
	port := toPort(p.Port)
	port.SecurityGroups = p.SecurityGroups
	port.PortSecurityEnabled = p.PortSecurityEnabled
	port.RevisionNumber = p.RevisionNumber
	if p.HostID != nil {
		port.BindingHostID, port.BindingHostKnown = *p.HostID, true
	}
	return port
}

// listPorts is the one port listing: every query (by device, by devices of
// a project, by subnet, by security group, by address) follows every page
// and converts the same way.
func (n *Neutron) listPorts(ctx context.Context, opts ports.ListOptsBuilder) ([]Port, error) {
	list, err := listAll(ctx, n.caller, ServiceNetwork, "list_ports",
		func() pagination.Pager { return ports.List(n.client, opts) }, into[portJSON](ports.ExtractPortsInto))
	if err != nil {
		return nil, err
	}
	out := make([]Port, 0, len(list))
	for _, p := range list {
		out = append(out, fromPortJSON(p))
	}
	return out, nil
}

// Port reads one port; a port Neutron says does not exist wraps
// ErrNotFound.
func (n *Neutron) Port(ctx context.Context, id string) (*Port, error) {
	var p portJSON
	err := n.do(ctx, "get_port", func(ctx context.Context) error {
		return ports.Get(ctx, n.client, id).ExtractInto(&p)
	})
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil, fmt.Errorf("port %s: %w: %w", id, ErrNotFound, err)
	}
	if err != nil {
		return nil, fmt.Errorf("get port %s: %w", id, err)
	}
	out := fromPortJSON(p)
	return &out, nil
}

// updatePort writes opts to a port whose revision_number the opts carry;
// a 412 (the port changed since it was read) wraps ErrConflict.
func (n *Neutron) updatePort(ctx context.Context, id string, opts ports.UpdateOpts) error {
	err := n.do(ctx, "update_port", func(ctx context.Context) error {
		return ports.Update(ctx, n.client, id, opts).Err
	})
	return conflict(err)
}

// conflict maps Neutron's 412 (If-Match revision mismatch) to ErrConflict.
func conflict(err error) error {
	if gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed) {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

// SetAllowedAddressPairs replaces the port's allowed address pairs if the
// port is still at revision (ErrConflict if not).
func (n *Neutron) SetAllowedAddressPairs(ctx context.Context, portID string, pairs []AddressPair, revision int) error {
	ap := make([]ports.AddressPair, 0, len(pairs))
	for _, p := range pairs {
		ap = append(ap, ports.AddressPair{IPAddress: p.IPAddress, MACAddress: p.MACAddress})
	}
	return n.updatePort(ctx, portID, ports.UpdateOpts{AllowedAddressPairs: &ap, RevisionNumber: &revision})
}
