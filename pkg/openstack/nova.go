package openstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
)

var _ Compute = (*Nova)(nil)

// Nova is every Nova call Stackward makes (servers, flavors) through
// gophercloud, each through the Caller; the CCM and the approver consume it
// as Compute. The adapters are named after their service: Nova, Neutron,
// Octavia.
type Nova struct {
	client *gophercloud.ServiceClient
	caller *Caller

	// flavorNames caches flavor ID → name for clouds older than
	// microversion 2.47, where a server only carries its flavor's ID.
	// Flavors are immutable in Nova, so the cache never goes stale.
	mu          sync.Mutex
	flavorNames map[string]string
}

func newNova(client *gophercloud.ServiceClient, caller *Caller) *Nova {
	return &Nova{client: client, caller: caller, flavorNames: map[string]string{}}
}

// novaServer is the JSON of a server, decoded directly (rather than through
// servers.Server's map[string]any) into the fields Stackward uses.
type novaServer struct {
	ID               string                   `json:"id"`
	Name             string                   `json:"name"`
	Status           string                   `json:"status"`
	TenantID         string                   `json:"tenant_id"`
	AvailabilityZone string                   `json:"OS-EXT-AZ:availability_zone"`
	AccessIPv4       string                   `json:"accessIPv4"`
	AccessIPv6       string                   `json:"accessIPv6"`
	Metadata         map[string]string        `json:"metadata"`
	LaunchedAt       string                   `json:"OS-SRV-USG:launched_at"`
	Flavor           novaFlavor               `json:"flavor"`
	Addresses        map[string][]novaAddress `json:"addresses"`
	TaskState        *string                  `json:"OS-EXT-STS:task_state"`
}

type novaFlavor struct {
	ID           string `json:"id"`            // before 2.47
	OriginalName string `json:"original_name"` // 2.47 and later
}

type novaAddress struct {
	Addr    string `json:"addr"`
	Version int    `json:"version"`
	Type    string `json:"OS-EXT-IPS:type"`
	MAC     string `json:"OS-EXT-IPS-MAC:mac_addr"`
}

func (s *novaServer) toServer() *Server {
	out := &Server{
		ID:               s.ID,
		Name:             s.Name,
		Status:           s.Status,
		TenantID:         s.TenantID,
		FlavorName:       s.Flavor.OriginalName,
		AvailabilityZone: s.AvailabilityZone,
		AccessIPv4:       s.AccessIPv4,
		AccessIPv6:       s.AccessIPv6,
		Metadata:         s.Metadata,
		Addresses:        make(map[string][]ServerAddress, len(s.Addresses)),
	}
	if s.TaskState != nil {
		out.TaskState = *s.TaskState
	}
	for network, addrs := range s.Addresses {
		list := make([]ServerAddress, 0, len(addrs))
		for _, a := range addrs {
			list = append(list, ServerAddress(a))
		}
		out.Addresses[network] = list
	}
	// Nova writes launched_at without a zone; it is UTC.
	for _, layout := range []string{"2006-01-02T15:04:05.000000", "2006-01-02T15:04:05", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s.LaunchedAt); err == nil {
			out.LaunchedAt = t.UTC()
			break
		}
	}
	return out
}

// GetServer returns one server. Only a 404 or a DELETED server is
// ErrNotFound; the error then also wraps the cloud's answer.
func (c *Nova) GetServer(ctx context.Context, id string) (*Server, error) {
	var raw novaServer
	err := c.caller.Do(ctx, ServiceCompute, "get_server", func(ctx context.Context) error {
		return servers.Get(ctx, c.client, id).ExtractInto(&raw)
	})
	if err != nil {
		if isNovaNotFound(err) {
			return nil, fmt.Errorf("get server %q: %w (%w)", id, ErrNotFound, err)
		}
		return nil, fmt.Errorf("get server %q: %w", id, err)
	}
	// A 200 that is not a server (a proxy's page, an empty object) is no
	// answer at all, least of all "this server has no name or addresses".
	if raw.ID != id {
		return nil, fmt.Errorf("get server %q: the compute API answered 200 without that server", id)
	}
	if raw.Status == StatusDeleted {
		return nil, fmt.Errorf("get server %q: %w (status %s)", id, ErrNotFound, StatusDeleted)
	}
	srv := raw.toServer()
	if err := c.fillFlavorNames(ctx, []*Server{srv}, []novaServer{raw}); err != nil {
		return nil, fmt.Errorf("get server %q: %w", id, err)
	}
	return srv, nil
}

// ListServers lists servers/detail, following every page. A failed page
// fails (and retries) the whole listing: a partial list must never be
// mistaken for the truth.
func (c *Nova) ListServers(ctx context.Context, opts ListServersOpts) ([]Server, error) {
	var all []novaServer
	err := c.caller.Do(ctx, ServiceCompute, "list_servers", func(ctx context.Context) error {
		var err error
		all, err = c.listDetail(ctx, opts)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	out := make([]Server, 0, len(all))
	ptrs := make([]*Server, 0, len(all))
	for i := range all {
		out = append(out, *all[i].toServer())
	}
	for i := range out {
		ptrs = append(ptrs, &out[i])
	}
	if err := c.fillFlavorNames(ctx, ptrs, all); err != nil {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	return out, nil
}

// serverPage is one page of servers/detail as Nova sends it. Servers is a
// pointer so that a body without the key (not Nova speaking) is told apart
// from an empty page.
type serverPage struct {
	Servers *[]novaServer      `json:"servers"`
	Links   []gophercloud.Link `json:"servers_links"`
}

// listDetail follows servers/detail's "next" links, decoding each page once
// into the fields we use. gophercloud's pager decodes every page three times
// (generic body, emptiness check, typed extract), which made a 10,000-server
// listing, the CCM's periodic bulk sync, cost seconds of CPU.
func (c *Nova) listDetail(ctx context.Context, opts ListServersOpts) ([]novaServer, error) {
	query, err := servers.ListOpts{Name: opts.Name, Status: opts.Status}.ToServerListQuery()
	if err != nil {
		return nil, err
	}
	var all []novaServer
	next := c.client.ServiceURL("servers", "detail") + query
	for page := 0; next != ""; page++ {
		if page > maxPages {
			return nil, fmt.Errorf("servers/detail: more than %d pages, stopping (a pagination loop?)", maxPages)
		}
		var body serverPage
		// gophercloud reads and closes the body: it decodes it into body.
		if _, err := c.client.Get(ctx, next, &body, &gophercloud.RequestOpts{OkCodes: []int{200}}); err != nil { //nolint:bodyclose // see above
			return nil, err
		}
		if body.Servers == nil {
			return nil, fmt.Errorf("servers/detail: the compute API answered 200 without a server list")
		}
		all = append(all, *body.Servers...)
		next = ""
		if len(*body.Servers) > 0 {
			next = nextLink(body.Links)
		}
	}
	return all, nil
}

// maxPages bounds a listing: Nova's default page of 1,000 servers makes it
// ten million servers.
const maxPages = 10000

func nextLink(links []gophercloud.Link) string {
	for _, l := range links {
		if l.Rel == "next" {
			return l.Href
		}
	}
	return ""
}

// fillFlavorNames names the flavors of servers from clouds older than 2.47.
func (c *Nova) fillFlavorNames(ctx context.Context, srvs []*Server, raw []novaServer) error {
	for i, s := range srvs {
		if s.FlavorName != "" || raw[i].Flavor.ID == "" {
			continue
		}
		name, err := c.flavorName(ctx, raw[i].Flavor.ID)
		if err != nil {
			return err
		}
		s.FlavorName = name
	}
	return nil
}

func (c *Nova) flavorName(ctx context.Context, id string) (string, error) {
	c.mu.Lock()
	name, ok := c.flavorNames[id]
	c.mu.Unlock()
	if ok {
		return name, nil
	}
	var body struct {
		Flavor struct {
			Name string `json:"name"`
		} `json:"flavor"`
	}
	err := c.caller.Do(ctx, ServiceCompute, "get_flavor", func(ctx context.Context) error {
		return flavors.Get(ctx, c.client, id).ExtractInto(&body)
	})
	switch {
	case gophercloud.ResponseCodeIs(err, 404):
		// A deleted flavor still names the server's type: use its ID.
		body.Flavor.Name = id
	case err != nil:
		return "", fmt.Errorf("get flavor %q: %w", id, err)
	}
	c.mu.Lock()
	c.flavorNames[id] = body.Flavor.Name
	c.mu.Unlock()
	return body.Flavor.Name, nil
}

// isNovaNotFound tells Nova's own 404 (an itemNotFound body, or the
// request-ID header every OpenStack service sets) from a 404 of something
// in front of it: an ingress's default backend during an upgrade, a wrong
// endpoint in the catalog. Only Nova's may mean "this server does not
// exist"; taking the other for it would delete every Node.
func isNovaNotFound(err error) bool {
	var resp gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &resp) || resp.Actual != http.StatusNotFound {
		return false
	}
	if bytes.Contains(resp.Body, []byte(`"itemNotFound"`)) {
		return true
	}
	return resp.ResponseHeader.Get("X-Openstack-Request-Id") != "" || resp.ResponseHeader.Get("X-Compute-Request-Id") != ""
}
