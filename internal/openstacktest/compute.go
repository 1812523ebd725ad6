// Package openstacktest holds the hand-written OpenStack test doubles that
// unit tests outside pkg/openstack share: one fake per interface, written
// once, so that each test states only what its cloud holds and how it
// fails. The real adapters are tested against stackward-cloudsim instead.
package openstacktest

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sync"

	"github.com/stackward/stackward/pkg/openstack"
)

// Compute is Nova as openstack.Compute sees it: a set of servers, optional
// failures, and a record of the calls made. It is safe for concurrent use.
//
// As for a project member, a DELETED server is not found by GetServer and
// not listed by ListServers, unless ReturnDeleted or ListDeleted says
// otherwise; both are set before the first call.
type Compute struct {
	// ReturnDeleted makes GetServer return a DELETED server as stored (as
	// Nova does for an administrator), so a caller cannot rely on the
	// adapter hiding deleted servers.
	ReturnDeleted bool
	// ListDeleted makes ListServers include DELETED servers, so a caller's
	// own filtering of them is tested.
	ListDeleted bool

	mu      sync.Mutex
	servers []openstack.Server // in the order they were put: the cloud's
	err     error
	listErr error
	block   chan struct{}
	calls   []Call
}

var _ openstack.Compute = (*Compute)(nil)

// Call is one call made to a Compute: a GetServer (Get true, with ID) or a
// ListServers (with its options).
type Call struct {
	Get  bool
	ID   string
	Opts openstack.ListServersOpts
}

// NewCompute is a Compute holding servers.
func NewCompute(servers ...openstack.Server) *Compute {
	return &Compute{servers: slices.Clone(servers)}
}

// Put adds a server, or replaces the one with its ID.
func (f *Compute) Put(s openstack.Server) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.servers {
		if f.servers[i].ID == s.ID {
			f.servers[i] = s
			return
		}
	}
	f.servers = append(f.servers, s)
}

// SetErr makes every call fail with err (a cloud outage); nil ends it.
func (f *Compute) SetErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// Err is the failure SetErr set, if any.
func (f *Compute) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// SetListErr makes ListServers alone fail with err; nil ends it.
func (f *Compute) SetListErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listErr = err
}

// BlockLists makes every ListServers wait (after it is recorded) until
// release is called or its context is done, to test callers that share
// one listing.
func (f *Compute) BlockLists() (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	block := make(chan struct{})
	f.block = block
	var once sync.Once
	return func() { once.Do(func() { close(block) }) }
}

// Calls are the calls made so far, in order.
func (f *Compute) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Counts are the GetServer and ListServers calls made so far.
func (f *Compute) Counts() (gets, lists int) {
	for _, c := range f.Calls() {
		if c.Get {
			gets++
		} else {
			lists++
		}
	}
	return gets, lists
}

// GetServer returns the server with id; an unknown one is
// openstack.ErrNotFound.
func (f *Compute) GetServer(_ context.Context, id string) (*openstack.Server, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, Call{Get: true, ID: id})
	if f.err != nil {
		return nil, f.err
	}
	for _, s := range f.servers {
		if s.ID == id && (s.Status != openstack.StatusDeleted || f.ReturnDeleted) {
			return &s, nil
		}
	}
	return nil, fmt.Errorf("get server %q: %w", id, openstack.ErrNotFound)
}

// ListServers filters as Nova does: the name is a regular expression
// search, the status an exact match. Servers come in the order they were
// put (NewCompute, then Put), standing for the cloud's.
func (f *Compute) ListServers(ctx context.Context, opts openstack.ListServersOpts) ([]openstack.Server, error) {
	f.mu.Lock()
	f.calls = append(f.calls, Call{Opts: opts})
	block := f.block
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	if f.listErr != nil {
		return nil, f.listErr
	}
	var re *regexp.Regexp
	if opts.Name != "" {
		var err error
		if re, err = regexp.Compile(opts.Name); err != nil {
			return nil, fmt.Errorf("list servers: bad name filter %q: %w", opts.Name, err)
		}
	}
	var out []openstack.Server
	for _, s := range f.servers {
		if s.Status == openstack.StatusDeleted && !f.ListDeleted ||
			re != nil && !re.MatchString(s.Name) || opts.Status != "" && s.Status != opts.Status {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}
