package openstack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ProjectTrunkLister is the part of Neutron the TrunkCache reads.
type ProjectTrunkLister interface {
	// ProjectTrunks lists the project's trunks; ErrNoTrunkExtension when
	// Neutron has none.
	ProjectTrunks(ctx context.Context, projectID string) ([]Trunk, error)
	PortsByID(ctx context.Context, ids []string) ([]Port, error)
	Networks(ctx context.Context, ids []string) ([]NetworkInfo, error)
}

var _ ProjectTrunkLister = (*Neutron)(nil)

// ServerTrunks is what Neutron said about the trunks on one server's
// ports: the parent ports (device_id the server), their trunks, the
// subports as listed by ID, and the subports' networks.
type ServerTrunks struct {
	Ports    []Port
	Trunks   []Trunk
	Subports []Port
	Networks []NetworkInfo
}

// TrunkCache answers, for every server, the trunks on its ports from one
// reading of the project's trunks, refreshed at most every TTL like the
// ServerCache: the project's trunks (one request), then their parent ports
// and subports by ID, then the subports' networks (one request each,
// split by QueryBudget). A project without trunks costs one request per
// TTL whatever the number of nodes; with trunks, three.
//
// A failed reading is an error for every server (never "no trunks"), and
// is remembered for the TTL like a good one. Only Neutron's 404 on the
// trunk collection (no trunk extension) reads as no trunks.
type TrunkCache struct {
	neutron   ProjectTrunkLister
	projectID string
	byServer  *sharedReading[map[string]*ServerTrunks]
}

// NewTrunkCache caches the trunks of projectID ("" for what the
// credentials see) for ttl (10s when ttl <= 0).
func NewTrunkCache(neutron ProjectTrunkLister, projectID string, ttl time.Duration) *TrunkCache {
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	c := &TrunkCache{neutron: neutron, projectID: projectID}
	c.byServer = newSharedReading(ttl, c.read)
	return c
}

// OfServer returns the trunks on the server's ports (none: a zero value).
func (c *TrunkCache) OfServer(ctx context.Context, serverID string) (ServerTrunks, error) {
	byServer, err := c.byServer.get(ctx)
	if err != nil {
		return ServerTrunks{}, fmt.Errorf("trunks of server %s: %w", serverID, err)
	}
	if t := byServer[serverID]; t != nil {
		return *t, nil
	}
	return ServerTrunks{}, nil
}

func (c *TrunkCache) read(ctx context.Context) (map[string]*ServerTrunks, error) {
	trunks, err := c.neutron.ProjectTrunks(ctx, c.projectID)
	if errors.Is(err, ErrNoTrunkExtension) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(trunks) == 0 {
		return nil, nil
	}
	var ids []string
	for _, t := range trunks {
		ids = append(ids, t.PortID)
		for _, s := range t.SubPorts {
			ids = append(ids, s.PortID)
		}
	}
	slices.Sort(ids)
	ports := map[string]Port{}
	for _, chunk := range Chunks(slices.Compact(ids), len("id=&"), QueryBudget) {
		list, err := c.neutron.PortsByID(ctx, chunk)
		if err != nil {
			return nil, err
		}
		for _, p := range list {
			ports[p.ID] = p
		}
	}
	out := map[string]*ServerTrunks{}
	var networkIDs []string
	for _, t := range trunks {
		parent, ok := ports[t.PortID]
		if !ok || parent.DeviceID == "" {
			continue // a parent no server uses (yet), or not visible
		}
		st := out[parent.DeviceID]
		if st == nil {
			st = &ServerTrunks{}
			out[parent.DeviceID] = st
		}
		st.Ports = append(st.Ports, parent)
		st.Trunks = append(st.Trunks, t)
		for _, s := range t.SubPorts {
			if p, ok := ports[s.PortID]; ok {
				st.Subports = append(st.Subports, p)
				if !slices.Contains(networkIDs, p.NetworkID) {
					networkIDs = append(networkIDs, p.NetworkID)
				}
			}
		}
	}
	var networks []NetworkInfo
	for _, chunk := range Chunks(networkIDs, len("id=&"), QueryBudget) {
		list, err := c.neutron.Networks(ctx, chunk)
		if err != nil {
			return nil, err
		}
		networks = append(networks, list...)
	}
	for _, st := range out {
		st.Networks = networks
	}
	return out, nil
}
