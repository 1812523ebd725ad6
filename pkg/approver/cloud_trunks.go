package approver

import (
	"context"
	"errors"
	"slices"

	"github.com/stackward/stackward/pkg/openstack"
)

// A request may name the address of a subport: a port that reaches the
// server as a VLAN of a trunk on one of its ports (nodeaddress.Subports).
// Like the floating IPs, the trunks are read only when a requested IP is
// no fixed IP of the server's ports, so an ordinary request costs no more
// than before: then one listing of the trunks on the ports (per batch) and,
// when there are some, one of their subports by ID. Neutron without the
// trunk extension (404 on /v2.0/trunks) has no subports; any other failure
// leaves the request pending.

// trunkRead is what Neutron said about the trunks on some ports.
type trunkRead struct {
	byParent map[string][]openstack.Trunk // by parent port ID
	subports map[string]openstack.Port    // by ID
}

// readTrunks lists the trunks whose parent is one of portIDs, then their
// subports, each within openstack.QueryBudget (chunked) and the rate limit.
func (c *openStackCloud) readTrunks(ctx context.Context, portIDs []string) (*trunkRead, error) {
	out := &trunkRead{byParent: map[string][]openstack.Trunk{}, subports: map[string]openstack.Port{}}
	var subportIDs []string
	for _, chunk := range openstack.Chunks(portIDs, len("port_id=&"), openstack.QueryBudget) {
		if err := c.wait(ctx); err != nil {
			return nil, err
		}
		trunks, err := c.ownership.TrunksOfPorts(ctx, chunk)
		if errors.Is(err, openstack.ErrNoTrunkExtension) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for _, t := range trunks {
			out.byParent[t.PortID] = append(out.byParent[t.PortID], t)
			for _, s := range t.SubPorts {
				subportIDs = append(subportIDs, s.PortID)
			}
		}
	}
	slices.Sort(subportIDs)
	for _, chunk := range openstack.Chunks(slices.Compact(subportIDs), len("id=&"), openstack.QueryBudget) {
		if err := c.wait(ctx); err != nil {
			return nil, err
		}
		ports, err := c.ownership.PortsByID(ctx, chunk)
		if err != nil {
			return nil, err
		}
		for _, p := range ports {
			out.subports[p.ID] = p
		}
	}
	return out, nil
}

// of returns the trunks on ports and their subports (as listed).
func (r *trunkRead) of(ports []openstack.Port) ([]openstack.Trunk, []openstack.Port) {
	if r == nil {
		return nil, nil
	}
	var trunks []openstack.Trunk
	var subports []openstack.Port
	for _, p := range ports {
		for _, t := range r.byParent[p.ID] {
			trunks = append(trunks, t)
			for _, s := range t.SubPorts {
				if sp, ok := r.subports[s.PortID]; ok {
					subports = append(subports, sp)
				}
			}
		}
	}
	return trunks, subports
}
