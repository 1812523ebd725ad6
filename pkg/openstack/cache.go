package openstack

import (
	"context"
	"fmt"
	"slices"
	"time"
)

var _ Compute = (*ServerCache)(nil)

// ServerCache serves server lookups from one servers/detail listing,
// refreshed at most every TTL, so that syncing N nodes costs one list call
// per TTL instead of N GETs. It is meant for periodic work (address sync,
// shutdown checks) where data a few seconds old is fine.
//
// Absence from the listing never means "not found": an ID or name the
// listing does not know is looked up directly, and only the cloud's own 404
// is ErrNotFound. A failed listing is remembered for the TTL too, so an
// outage costs one (retried) list call per TTL, not one per node.
//
// Servers returned share their maps with the cache: treat them as read-only.
type ServerCache struct {
	compute Compute
	servers *sharedReading[*serverSnapshot]
}

type serverSnapshot struct {
	list   []Server // in the cloud's order
	byID   map[string]*Server
	byName map[string][]*Server
}

// NewServerCache caches compute's servers for ttl (10s when ttl <= 0).
func NewServerCache(compute Compute, ttl time.Duration) *ServerCache {
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	c := &ServerCache{compute: compute}
	c.servers = newSharedReading(ttl, c.read)
	return c
}

// GetServer returns the server from the listing, or from a direct GET when
// the listing does not have it (a server created since).
func (c *ServerCache) GetServer(ctx context.Context, id string) (*Server, error) {
	snap, err := c.servers.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("get server %q: %w", id, err)
	}
	if s, ok := snap.byID[id]; ok {
		if s.Status == StatusDeleted {
			return nil, fmt.Errorf("get server %q: %w (status %s)", id, ErrNotFound, StatusDeleted)
		}
		cp := *s
		return &cp, nil
	}
	return c.compute.GetServer(ctx, id)
}

// ListServers serves an unfiltered listing from the cache and passes
// filtered ones through.
func (c *ServerCache) ListServers(ctx context.Context, opts ListServersOpts) ([]Server, error) {
	if opts != (ListServersOpts{}) {
		return c.compute.ListServers(ctx, opts)
	}
	snap, err := c.servers.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	return slices.Clone(snap.list), nil
}

// serversNamed makes ServerForNode use the listing for name lookups; a name
// the listing does not know is asked of the cloud.
func (c *ServerCache) serversNamed(ctx context.Context, name string) ([]Server, error) {
	snap, err := c.servers.get(ctx)
	if err != nil {
		return nil, err
	}
	if found := snap.byName[name]; len(found) > 0 {
		out := make([]Server, 0, len(found))
		for _, s := range found {
			out = append(out, *s)
		}
		return out, nil
	}
	return listExactName(ctx, c.compute, name)
}

// Invalidate drops the listing, e.g. after the caller changed a server.
func (c *ServerCache) Invalidate() { c.servers.invalidate() }

// read lists the servers and indexes them.
func (c *ServerCache) read(ctx context.Context) (*serverSnapshot, error) {
	list, err := c.compute.ListServers(ctx, ListServersOpts{})
	if err != nil {
		return nil, err
	}
	snap := &serverSnapshot{list: list, byID: make(map[string]*Server, len(list)), byName: make(map[string][]*Server, len(list))}
	for i := range list {
		s := &list[i]
		snap.byID[s.ID] = s
		if !gone(s.Status) {
			snap.byName[s.Name] = append(snap.byName[s.Name], s)
		}
	}
	return snap, nil
}
