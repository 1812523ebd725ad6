package openstack

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNotListed is a Snapshot's answer for an instance it does not hold. It
// is not ErrNotFound: the caller asks the cloud directly before concluding
// anything (the instance may be newer than the listing, or visible to a
// targeted lookup only).
var ErrNotListed = errors.New("not in the listing")

// Snapshot is one read of instances started at Started: every page of the
// project's (TakeSnapshot), or those of some names (the approver's
// batches). It answers many lookups with one listing; the caller decides
// whether data from Started is fresh enough for its question, and an
// instance the read did not hold is ErrNotListed, never absent. Servers
// share their maps with the snapshot: read-only.
type Snapshot struct {
	Started time.Time
	Servers []Server // in the cloud's order

	byID   map[string]*Server
	byName map[string][]*Server
}

// TakeSnapshot lists the servers of the credential's project (Nova's
// servers/detail without all_tenants shows only those), following every
// page; a failed page fails the snapshot.
func TakeSnapshot(ctx context.Context, compute Compute) (*Snapshot, error) {
	started := time.Now()
	list, err := compute.ListServers(ctx, ListServersOpts{})
	if err != nil {
		return nil, fmt.Errorf("snapshot of the project's instances: %w", err)
	}
	return NewSnapshot(started, list), nil
}

// NewSnapshot indexes a server listing started at started.
func NewSnapshot(started time.Time, servers []Server) *Snapshot {
	s := &Snapshot{
		Started: started,
		Servers: servers,
		byID:    make(map[string]*Server, len(servers)),
		byName:  make(map[string][]*Server, len(servers)),
	}
	for i := range servers {
		srv := &servers[i]
		s.byID[srv.ID] = srv
		if !gone(srv.Status) {
			s.byName[srv.Name] = append(s.byName[srv.Name], srv)
		}
	}
	return s
}

// ServerForNode answers openstack.ServerForNode's question from the
// listing: by providerID when set, else by exact name (several live
// servers of that name are ErrAmbiguous). An instance the listing does not
// hold is ErrNotListed; a deleted one is ErrNotFound.
func (s *Snapshot) ServerForNode(providerID, nodeName string) (*Server, error) {
	if providerID != "" {
		_, id, err := ParseProviderID(providerID)
		if err != nil {
			return nil, err
		}
		srv, ok := s.byID[id]
		switch {
		case !ok:
			return nil, fmt.Errorf("server %q: %w", id, ErrNotListed)
		case srv.Status == StatusDeleted:
			return nil, fmt.Errorf("get server %q: %w (status %s)", id, ErrNotFound, StatusDeleted)
		}
		cp := *srv
		return &cp, nil
	}
	found := s.byName[nodeName]
	if nodeName == "" || len(found) == 0 {
		return nil, fmt.Errorf("server named %q: %w", nodeName, ErrNotListed)
	}
	candidates := make([]Server, 0, len(found))
	for _, srv := range found {
		candidates = append(candidates, *srv)
	}
	return pickOne(nodeName, candidates)
}
