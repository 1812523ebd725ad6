package openstack

import (
	"context"
	"fmt"
	"regexp"
	"sync"
)

// fakeCompute is a Compute over a fixed list of servers that counts calls
// and can fail.
type fakeCompute struct {
	mu       sync.Mutex
	servers  []Server
	listErr  error
	gets     int
	lists    int
	listOpts []ListServersOpts
	// block, when set, is waited on by ListServers (to test sharing).
	block chan struct{}
}

func (f *fakeCompute) GetServer(_ context.Context, id string) (*Server, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	for _, s := range f.servers {
		if s.ID == id {
			if s.Status == StatusDeleted {
				return nil, fmt.Errorf("get server %q: %w", id, ErrNotFound)
			}
			cp := s
			return &cp, nil
		}
	}
	return nil, fmt.Errorf("get server %q: %w", id, ErrNotFound)
}

// ListServers interprets the name as a regex, as Nova does.
func (f *fakeCompute) ListServers(ctx context.Context, opts ListServersOpts) ([]Server, error) {
	f.mu.Lock()
	f.lists++
	f.listOpts = append(f.listOpts, opts)
	block, listErr := f.block, f.listErr
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if listErr != nil {
		return nil, listErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Server
	for _, s := range f.servers {
		if opts.Name != "" && !regexp.MustCompile(opts.Name).MatchString(s.Name) {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

func (f *fakeCompute) counts() (gets, lists int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets, f.lists
}
