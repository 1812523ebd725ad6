package openstack

import (
	"context"
	"fmt"
	"net/url"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// Ownership answers which addresses Neutron itself gives a server: the
// fixed IPs of its ports and the floating IPs on them. Unlike Nova's
// addresses (grouped by network name) and accessIPv4/v6 (free-form fields
// any project member may set), these are what the cloud controls, so the
// approver trusts only them. Three small questions about one server, each
// one request, and one that answers the first for many servers at once.
type Ownership interface {
	// ServerPorts returns the ports whose device_id is serverID and whose
	// project is projectID (GET /v2.0/ports?device_id=&project_id=).
	ServerPorts(ctx context.Context, serverID, projectID string) ([]Port, error)
	// FloatingIPsOfPorts returns the floating IPs associated with any of
	// the ports (GET /v2.0/floatingips?port_id=a&port_id=b).
	FloatingIPsOfPorts(ctx context.Context, portIDs []string) ([]FloatingIP, error)
	// Networks returns the networks with these IDs (GET /v2.0/networks?id=).
	Networks(ctx context.Context, ids []string) ([]NetworkInfo, error)
	// PortsOfServers returns the ports of the project on any of the
	// servers, in one request (GET /v2.0/ports?project_id=&device_id=a&
	// device_id=b): one request answers a batch of servers. Callers keep
	// the list within QueryBudget (Chunks).
	PortsOfServers(ctx context.Context, serverIDs []string, projectID string) ([]Port, error)
	// TrunkOwner answers which subports reach a server through a trunk on
	// one of its ports.
	TrunkOwner
}

// FloatingIP is a Neutron floating IP, as the approver and the load
// balancers read and create it.
type FloatingIP struct {
	ID             string
	Address        string // floating_ip_address
	PortID         string
	FixedIPAddress string
	ProjectID      string
	NetworkID      string // floating_network_id
	// SubnetID is the external subnet to allocate from (create only).
	SubnetID    string
	Description string
}

// NetworkInfo is the part of a Neutron network the approver needs.
type NetworkInfo struct {
	ID        string
	Name      string
	ProjectID string
	Shared    bool
	External  bool
}

var _ Ownership = (*Neutron)(nil)

// ServerPorts lists one server's ports of one project, following pages.
func (n *Neutron) ServerPorts(ctx context.Context, serverID, projectID string) ([]Port, error) {
	if serverID == "" {
		return nil, fmt.Errorf("ports of server: empty server ID")
	}
	out, err := n.listPorts(ctx, ports.ListOpts{DeviceID: serverID, ProjectID: projectID})
	if err != nil {
		return nil, fmt.Errorf("list ports of server %q in project %q: %w", serverID, projectID, err)
	}
	return out, nil
}

// multiQuery is a list query repeating one key (Neutron ORs the values).
type multiQuery struct {
	key    string
	values []string
}

func (q multiQuery) query() string {
	v := url.Values{}
	for _, s := range q.values {
		v.Add(q.key, s)
	}
	return "?" + v.Encode()
}

func (q multiQuery) ToFloatingIPListQuery() (string, error) { return q.query(), nil }
func (q multiQuery) ToNetworkListQuery() (string, error)    { return q.query(), nil }

// FloatingIPsOfPorts lists the floating IPs on any of the ports in one
// request; no ports, no request.
func (n *Neutron) FloatingIPsOfPorts(ctx context.Context, portIDs []string) ([]FloatingIP, error) {
	if len(portIDs) == 0 {
		return nil, nil
	}
	list, err := n.listFloatingIPs(ctx, "list_floating_ips", multiQuery{key: "port_id", values: portIDs})
	if err != nil {
		return nil, fmt.Errorf("list floating IPs of ports %v: %w", portIDs, err)
	}
	return list, nil
}

// networkJSON adds the fields gophercloud's networks.Network leaves to
// extensions (router:external).
type networkJSON struct {
	networks.Network
	External bool `json:"router:external"`
}

// Networks lists the networks with these IDs in one request.
func (n *Neutron) Networks(ctx context.Context, ids []string) ([]NetworkInfo, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var list []networkJSON
	err := n.caller.Do(ctx, ServiceNetwork, "list_networks", func(ctx context.Context) error {
		pages, err := networks.List(n.client, multiQuery{key: "id", values: ids}).AllPages(ctx)
		if err != nil {
			return err
		}
		list = nil
		return networks.ExtractNetworksInto(pages, &list)
	})
	if err != nil {
		return nil, fmt.Errorf("list networks %v: %w", ids, err)
	}
	out := make([]NetworkInfo, 0, len(list))
	for _, nw := range list {
		project := nw.ProjectID
		if project == "" {
			project = nw.TenantID
		}
		out = append(out, NetworkInfo{ID: nw.ID, Name: nw.Name, ProjectID: project, Shared: nw.Shared, External: nw.External})
	}
	return out, nil
}
