package openstack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
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
	ttl     time.Duration
	now     func() time.Time

	mu         sync.Mutex
	cur        *serverSnapshot
	refreshing chan struct{} // closed when the running refresh ends
}

type serverSnapshot struct {
	at     time.Time
	err    error
	list   []Server // in the cloud's order
	byID   map[string]*Server
	byName map[string][]*Server
}

// NewServerCache caches compute's servers for ttl (10s when ttl <= 0).
func NewServerCache(compute Compute, ttl time.Duration) *ServerCache {
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	return &ServerCache{compute: compute, ttl: ttl, now: time.Now}
}

// GetServer returns the server from the listing, or from a direct GET when
// the listing does not have it (a server created since).
func (c *ServerCache) GetServer(ctx context.Context, id string) (*Server, error) {
	snap, err := c.snapshot(ctx)
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
	snap, err := c.snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	return slices.Clone(snap.list), nil
}

// serversNamed makes ServerForNode use the listing for name lookups; a name
// the listing does not know is asked of the cloud.
func (c *ServerCache) serversNamed(ctx context.Context, name string) ([]Server, error) {
	snap, err := c.snapshot(ctx)
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
func (c *ServerCache) Invalidate() {
	c.mu.Lock()
	c.cur = nil
	c.mu.Unlock()
}

// snapshot returns a listing younger than the TTL, refreshing it when
// needed; concurrent callers share one refresh.
func (c *ServerCache) snapshot(ctx context.Context) (*serverSnapshot, error) {
	c.mu.Lock()
	for {
		if s := c.cur; s != nil && c.now().Sub(s.at) < c.ttl {
			c.mu.Unlock()
			return s, s.err
		}
		wait := c.refreshing
		if wait == nil {
			break
		}
		c.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		c.mu.Lock()
	}
	done := make(chan struct{})
	c.refreshing = done
	c.mu.Unlock()

	at := c.now()
	list, err := c.compute.ListServers(ctx, ListServersOpts{})
	snap := &serverSnapshot{at: at, err: err}
	if err == nil {
		snap.list = list
		snap.byID = make(map[string]*Server, len(list))
		snap.byName = make(map[string][]*Server, len(list))
		for i := range list {
			s := &list[i]
			snap.byID[s.ID] = s
			if !gone(s.Status) {
				snap.byName[s.Name] = append(snap.byName[s.Name], s)
			}
		}
	}

	c.mu.Lock()
	// The caller giving up says nothing about the cloud: do not remember it.
	if !(err != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))) {
		c.cur = snap
	}
	c.refreshing = nil
	close(done)
	c.mu.Unlock()
	return snap, err
}
