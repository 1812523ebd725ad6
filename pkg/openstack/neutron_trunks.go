package openstack

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/trunks"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// Trunk is a Neutron trunk (the trunk extension): a parent port, which a
// server uses as a NIC, carrying subports as VLANs on that NIC. A subport's
// addresses are the server's as much as its parent's are, yet Nova does not
// list them: its device_id is not the server.
type Trunk struct {
	ID, Name, ProjectID string
	// PortID is the parent port.
	PortID   string
	Status   string
	SubPorts []SubPort
}

// SubPort is one port of a trunk and its VLAN.
type SubPort struct {
	PortID           string
	SegmentationType string
	SegmentationID   int
}

// TrunkOwner is the cloud, asked which trunks have these parent ports and
// what their subports are.
type TrunkOwner interface {
	// TrunksOfPorts returns the trunks whose parent is one of the ports
	// (GET /v2.0/trunks?port_id=a&port_id=b); ErrNoTrunkExtension when
	// Neutron has no trunks at all.
	TrunksOfPorts(ctx context.Context, portIDs []string) ([]Trunk, error)
	// PortsByID returns the ports with these IDs that the caller can see
	// (GET /v2.0/ports?id=a&id=b).
	PortsByID(ctx context.Context, ids []string) ([]Port, error)
}

var _ TrunkOwner = (*Neutron)(nil)

func (q multiQuery) ToTrunkListQuery() (string, error) { return q.query(), nil }
func (q multiQuery) ToPortListQuery() (string, error)  { return q.query(), nil }

// TrunksOfPorts lists the trunks whose parent port is one of portIDs, in
// one request; no ports, no request.
func (n *Neutron) TrunksOfPorts(ctx context.Context, portIDs []string) ([]Trunk, error) {
	if len(portIDs) == 0 {
		return nil, nil
	}
	list, err := n.listTrunks(ctx, multiQuery{key: "port_id", values: portIDs})
	if err != nil {
		return nil, fmt.Errorf("list trunks of ports %v: %w", portIDs, err)
	}
	return list, nil
}

// ProjectTrunks lists the trunks of a project ("" lists what the
// credentials can see), in one request.
func (n *Neutron) ProjectTrunks(ctx context.Context, projectID string) ([]Trunk, error) {
	q := multiQuery{key: "project_id"}
	if projectID != "" {
		q.values = []string{projectID}
	}
	list, err := n.listTrunks(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("list trunks of project %q: %w", projectID, err)
	}
	return list, nil
}

func (n *Neutron) listTrunks(ctx context.Context, q multiQuery) ([]Trunk, error) {
	list, err := listAll(ctx, n.caller, ServiceNetwork, "list_trunks",
		func() pagination.Pager { return trunks.List(n.client, q) }, trunks.ExtractTrunks)
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil, fmt.Errorf("%w: %w", ErrNoTrunkExtension, err)
	}
	if err != nil {
		return nil, err
	}
	out := make([]Trunk, 0, len(list))
	for _, t := range list {
		project := t.ProjectID
		if project == "" {
			project = t.TenantID
		}
		tr := Trunk{ID: t.ID, Name: t.Name, ProjectID: project, PortID: t.PortID, Status: t.Status}
		for _, s := range t.Subports {
			tr.SubPorts = append(tr.SubPorts, SubPort{PortID: s.PortID, SegmentationType: s.SegmentationType, SegmentationID: s.SegmentationID})
		}
		out = append(out, tr)
	}
	return out, nil
}

// PortsByID lists the ports with these IDs in one request; no IDs, no
// request. A port the credentials cannot see is simply not in the answer.
func (n *Neutron) PortsByID(ctx context.Context, ids []string) ([]Port, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	out, err := n.listPorts(ctx, multiQuery{key: "id", values: ids})
	if err != nil {
		return nil, fmt.Errorf("list ports %v: %w", ids, err)
	}
	return out, nil
}
