package provider

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"sync"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/stackward/stackward/pkg/openstack"
)

// fakeCompute is Nova as the provider sees it: a set of servers, an
// optional failure for every call, and a count of the calls made.
type fakeCompute struct {
	mu      sync.Mutex
	servers map[string]openstack.Server
	// err, when set, is returned by every call (a cloud outage).
	err   error
	gets  int
	lists int
}

var _ openstack.Compute = (*fakeCompute)(nil)

func newFakeCompute(servers ...openstack.Server) *fakeCompute {
	f := &fakeCompute{servers: map[string]openstack.Server{}}
	for _, s := range servers {
		f.servers[s.ID] = s
	}
	return f
}

// unavailable is what the adapter returns for an HTTP 503 from Nova.
func unavailable() error {
	return fmt.Errorf("get server: %w", gophercloud.ErrUnexpectedResponseCode{
		Method: http.MethodGet, Expected: []int{http.StatusOK}, Actual: http.StatusServiceUnavailable,
	})
}

func (f *fakeCompute) GetServer(_ context.Context, id string) (*openstack.Server, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	if f.err != nil {
		return nil, f.err
	}
	s, ok := f.servers[id]
	if !ok {
		return nil, fmt.Errorf("get server %q: %w", id, openstack.ErrNotFound)
	}
	// Returned as stored, DELETED included: the provider must not rely on
	// the adapter hiding deleted servers.
	return &s, nil
}

// ListServers filters by name as Nova does (a regular expression search)
// and, as for a non-admin, leaves deleted servers out.
func (f *fakeCompute) ListServers(_ context.Context, opts openstack.ListServersOpts) ([]openstack.Server, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.err != nil {
		return nil, f.err
	}
	var re *regexp.Regexp
	if opts.Name != "" {
		var err error
		if re, err = regexp.Compile(opts.Name); err != nil {
			return nil, fmt.Errorf("list servers: bad name filter: %w", err)
		}
	}
	var out []openstack.Server
	for _, s := range f.servers {
		if s.Status == openstack.StatusDeleted || re != nil && !re.MatchString(s.Name) || opts.Status != "" && s.Status != opts.Status {
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (f *fakeCompute) setErr(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

// calls returns the GETs and listings made so far.
func (f *fakeCompute) calls() (gets, lists int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets, f.lists
}
