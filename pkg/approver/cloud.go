package approver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/openstack"
)

// Instance is what the cloud says about one node's instance: everything
// the cloud checks read, from one read started after the request was
// observed: the server (Nova) and what Neutron says it owns.
type Instance struct {
	Server *openstack.Server
	// Ownership is the server's ports of the cluster's project, the
	// floating IPs on them and their networks, read with Server. nil when
	// it was not asked: the server cannot be approved whatever it owns
	// (deleted, another project's, not running).
	Ownership *nodeaddress.CloudView
	// OwnershipErr is why Ownership could not be read: the address check
	// then has no answer (the request stays pending), the server's own
	// checks still do.
	OwnershipErr error
}

// CloudOptions shape the approver's cloud lookups.
type CloudOptions struct {
	// QPS and Burst limit cloud calls (each request of a targeted lookup,
	// each listing answering a whole batch of requests), not approval
	// requests; QPS 0 means no limit.
	QPS   float64
	Burst int
	// Window is the least time between two lookups' starts: requests
	// arriving meanwhile wait and share one listing. 0 takes
	// DefaultCoalesceWindow; negative means back to back.
	Window time.Duration
	// DNSSuffixes are the approver's --dns-suffix values: a batch then
	// also lists the server names they bind a Node's name to.
	DNSSuffixes []string
}

// NewOpenStackCloud returns the Cloud that asks Nova through compute and
// Neutron through ownership, for the servers and ports of project
// projectID. Concurrent lookups are coalesced: one set of bulk requests
// (servers by name, their ports, the floating IPs on those) started after
// all of them were asked answers them all, its size that of the batch and
// not of the project; a lone lookup is targeted (the server, then its
// ports and their floating IPs). It deliberately does not use the CCM's
// ServerCache: an approval rests on what the cloud said after the request
// was made, never on a listing from before (a floating IP just moved to
// another server must not be approved for the old one).
func NewOpenStackCloud(compute openstack.Compute, ownership openstack.Ownership, region, projectID string, opts CloudOptions) Cloud {
	c := &openStackCloud{compute: compute, ownership: ownership, region: region, projectID: projectID,
		dnsSuffixes: nodeaddress.NormalizeDNSSuffixes(opts.DNSSuffixes)}
	if opts.QPS > 0 {
		c.limiter = rate.NewLimiter(rate.Limit(opts.QPS), max(1, opts.Burst))
	}
	window := opts.Window
	switch {
	case window == 0:
		window = DefaultCoalesceWindow
	case window < 0:
		window = 0
	}
	c.batches = openstack.NewCoalescer(window, 0, DefaultCoalesceOverlap, c.fetch)
	return c
}

type openStackCloud struct {
	compute   openstack.Compute
	ownership openstack.Ownership
	region    string
	projectID string
	limiter   *rate.Limiter // nil: unlimited
	batches   *openstack.Coalescer[nodeKey, lookupResult]
	// dnsSuffixes (normalized) widen the names a batch lists for a Node
	// with a providerID, as the name binding does.
	dnsSuffixes []string
}

// nodeKey is what identifies a lookup: the Node's providerID, else its
// name, and the IPs asked for (sorted, comma-separated).
type nodeKey struct{ providerID, nodeName, ips string }

// asked returns the IPs of k.
func (k nodeKey) asked() []string {
	if k.ips == "" {
		return nil
	}
	return strings.Split(k.ips, ",")
}

// needsFloatingIPs reports whether an IP asked for is not a fixed IP of
// the ports: only then can the floating IPs or the subports of trunks on
// the ports change the answer.
func needsFloatingIPs(asked []string, ports []openstack.Port) bool {
	for _, ip := range asked {
		fixed := false
		for _, p := range ports {
			for _, f := range p.FixedIPs {
				if a, err := netip.ParseAddr(f.IPAddress); err == nil && a.Unmap().String() == ip {
					fixed = true
				}
			}
		}
		if !fixed {
			return true
		}
	}
	return false
}

type lookupResult struct {
	inst *Instance
	err  error
}

func (c *openStackCloud) InstanceForNode(ctx context.Context, providerID, nodeName string, ips []netip.Addr) (*Instance, error) {
	if providerID != "" && c.region != "" {
		if region, _, err := openstack.ParseProviderID(providerID); err == nil && region != "" && region != c.region {
			// Another region's instance may well exist: this cloud.conf
			// cannot tell, so no verdict (the CCM answers the same way).
			return nil, fmt.Errorf("provider ID %s is in region %q, this cloud.conf is for region %q", providerID, region, c.region)
		}
	}
	asked := make([]string, 0, len(ips))
	for _, ip := range ips {
		asked = append(asked, ip.Unmap().String())
	}
	slices.Sort(asked)
	res, err := c.batches.Do(ctx, nodeKey{providerID: providerID, nodeName: nodeName, ips: strings.Join(slices.Compact(asked), ",")})
	if err == nil {
		err = res.err
	}
	if err != nil {
		return nil, fmt.Errorf("server for node %q: %w", nodeName, err)
	}
	return res.inst, nil
}

// fetch answers one batch: a lone key with a targeted lookup, several with
// bulk requests sized by the batch, not the project: the servers of the
// names the keys may bind to (one Nova listing filtered by name), the
// project's ports on those servers, and the floating IPs on those ports
// when a request asks for an IP that is no fixed IP of its server's ports;
// a targeted lookup for any key the listing does not hold (a server whose
// name does not bind to its node: it is denied either way).
func (c *openStackCloud) fetch(ctx context.Context, b openstack.Batch[nodeKey]) (map[nodeKey]lookupResult, error) {
	out := make(map[nodeKey]lookupResult, len(b.Keys))
	if len(b.Keys) == 1 {
		k := b.Keys[0]
		inst, err := c.targeted(ctx, k)
		out[k] = lookupResult{inst, err}
		return out, nil
	}
	snap, err := c.snapshot(ctx, b.Keys)
	if err != nil {
		return nil, err
	}
	var listed []*Instance
	// The ports of servers with a request for an IP that is no fixed IP
	// of theirs: only those can have a floating IP or a subport that
	// changes the answer.
	widerPorts := newStringSet()
	for _, k := range b.Keys {
		if r := snap.found[k]; r.err == nil && c.ownershipMatters(r.srv) && needsFloatingIPs(k.asked(), snap.ports[r.srv.ID]) {
			for _, p := range snap.ports[r.srv.ID] {
				widerPorts.add(p.ID)
			}
		}
	}
	if err := snap.readFloatingIPs(ctx, c, widerPorts.list); err != nil {
		return nil, err
	}
	if len(widerPorts.list) > 0 {
		if snap.trunks, err = c.readTrunks(ctx, widerPorts.list); err != nil {
			return nil, err
		}
	}
	for _, k := range b.Keys {
		srv, err := snap.found[k].srv, snap.found[k].err
		if errors.Is(err, openstack.ErrNotListed) {
			inst, err := c.targeted(ctx, k)
			out[k] = lookupResult{inst, err}
			continue
		}
		if err != nil {
			out[k] = lookupResult{nil, err}
			continue
		}
		inst := &Instance{Server: srv}
		if c.ownershipMatters(srv) {
			inst.Ownership = snap.viewOf(srv)
			listed = append(listed, inst)
		}
		out[k] = lookupResult{inst, nil}
	}
	// The networks of every listed server's ports in one request (or
	// none: openstack.CachedNetworks).
	var networkIDs []string
	for _, inst := range listed {
		networkIDs = appendNetworkIDs(networkIDs, inst.Ownership.Ports)
		networkIDs = appendNetworkIDs(networkIDs, inst.Ownership.Subports)
	}
	networks, err := c.networks(ctx, networkIDs)
	for _, inst := range listed {
		if err != nil {
			inst.Ownership, inst.OwnershipErr = nil, err
			continue
		}
		inst.Ownership.Networks = networks
	}
	return out, nil
}

// projectSnapshot is one read for a batch, every request started after
// the batch's last key joined.
type projectSnapshot struct {
	// found is each key's server in the listing (Snapshot.ServerForNode),
	// resolved once.
	found map[nodeKey]resolved
	ports map[string][]openstack.Port       // by device ID
	fips  map[string][]openstack.FloatingIP // by port ID
	// trunks on the ports whose floating IPs were read (nil: none read).
	trunks *trunkRead
}

type resolved struct {
	srv *openstack.Server
	err error
}

// candidateNames are the server names a key can bind to: the node's name,
// and for a Node with a providerID also that name without one of the DNS
// suffixes (nodeaddress.IsNodeNameOf). A Node without one is found by its
// exact name, as the targeted lookup does.
func (c *openStackCloud) candidateNames(k nodeKey) []string {
	names := []string{k.nodeName}
	if k.providerID == "" {
		return names
	}
	lower := nodeaddress.ASCIILower(k.nodeName)
	for _, suffix := range c.dnsSuffixes {
		if strings.HasSuffix(lower, "."+suffix) {
			names = append(names, k.nodeName[:len(k.nodeName)-len(suffix)-1])
		}
	}
	return names
}

// snapshot reads the batch's servers by name, then the project's ports on
// them. Each request is one call of the rate limit and stays within
// openstack.QueryBudget (a large batch is a few requests); any failure
// fails the whole batch (it is retried, never taken as absence).
func (c *openStackCloud) snapshot(ctx context.Context, keys []nodeKey) (*projectSnapshot, error) {
	if c.ownership == nil {
		return nil, errors.New("no Neutron client: cannot tell which addresses the cloud controls")
	}
	started := time.Now()
	names := newStringSet()
	for _, k := range keys {
		for _, n := range c.candidateNames(k) {
			if n != "" {
				names.add(n)
			}
		}
	}
	var servers []openstack.Server
	for _, chunk := range openstack.NameChunks(names.list, openstack.QueryBudget) {
		if err := c.wait(ctx); err != nil {
			return nil, err
		}
		list, err := c.compute.ListServers(ctx, openstack.ListServersOpts{Name: openstack.NamesRegexp(chunk)})
		if err != nil {
			return nil, err
		}
		servers = append(servers, list...)
	}
	listing := openstack.NewSnapshot(started, servers)
	s := &projectSnapshot{found: make(map[nodeKey]resolved, len(keys)), ports: map[string][]openstack.Port{}, fips: map[string][]openstack.FloatingIP{}}
	// Ports only of the servers some key resolves to and could approve.
	ids := newStringSet()
	for _, k := range keys {
		srv, err := listing.ServerForNode(k.providerID, k.nodeName)
		s.found[k] = resolved{srv, err}
		if err == nil && c.ownershipMatters(srv) {
			ids.add(srv.ID)
		}
	}
	// "device_id=" and "&" per ID.
	for _, chunk := range openstack.Chunks(ids.list, len("device_id=&"), openstack.QueryBudget) {
		if err := c.wait(ctx); err != nil {
			return nil, err
		}
		ports, err := c.ownership.PortsOfServers(ctx, chunk, c.projectID)
		if err != nil {
			return nil, err
		}
		for _, p := range ports {
			if p.DeviceID != "" {
				s.ports[p.DeviceID] = append(s.ports[p.DeviceID], p)
			}
		}
	}
	return s, nil
}

// readFloatingIPs adds the floating IPs on the ports (none: no request).
func (s *projectSnapshot) readFloatingIPs(ctx context.Context, c *openStackCloud, portIDs []string) error {
	for _, chunk := range openstack.Chunks(portIDs, len("port_id=&"), openstack.QueryBudget) {
		if err := c.wait(ctx); err != nil {
			return err
		}
		fips, err := c.ownership.FloatingIPsOfPorts(ctx, chunk)
		if err != nil {
			return err
		}
		for _, f := range fips {
			if f.PortID != "" {
				s.fips[f.PortID] = append(s.fips[f.PortID], f)
			}
		}
	}
	return nil
}

// stringSet keeps values once, in the order first added.
type stringSet struct {
	list []string
	seen map[string]bool
}

func newStringSet() *stringSet { return &stringSet{seen: map[string]bool{}} }

func (s *stringSet) add(v string) {
	if !s.seen[v] {
		s.seen[v] = true
		s.list = append(s.list, v)
	}
}

// viewOf is what the listings say srv owns, as a targeted lookup would
// (networks aside; floating IPs when they were read).
func (s *projectSnapshot) viewOf(srv *openstack.Server) *nodeaddress.CloudView {
	v := &nodeaddress.CloudView{Server: srv, Ports: slices.Clone(s.ports[srv.ID])}
	for _, p := range v.Ports {
		v.FloatingIPs = append(v.FloatingIPs, s.fips[p.ID]...)
	}
	v.Trunks, v.Subports = s.trunks.of(v.Ports)
	return v
}

// ownershipMatters reports whether the address check can be reached for
// srv: not for a server the instance checks deny or leave pending anyway.
func (c *openStackCloud) ownershipMatters(srv *openstack.Server) bool {
	switch {
	case srv.Status == openstack.StatusDeleted || srv.Status == openstack.StatusSoftDeleted:
		return false
	case c.projectID != "" && srv.TenantID != c.projectID:
		return false
	case slices.Contains(notRunning, srv.Status), beingDeleted(srv) != "":
		return false
	}
	return true
}

// targeted looks up one node's server, then (when it matters) its ports of
// the project, the floating IPs on them and their networks.
func (c *openStackCloud) targeted(ctx context.Context, k nodeKey) (*Instance, error) {
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	srv, err := openstack.ServerForNode(ctx, c.compute, k.providerID, k.nodeName)
	if err != nil {
		return nil, err
	}
	inst := &Instance{Server: srv}
	if c.ownershipMatters(srv) {
		view, err := c.serverOwnership(ctx, srv, k.asked())
		if err != nil {
			inst.OwnershipErr = err
		} else {
			inst.Ownership = view
		}
	}
	return inst, nil
}

// serverOwnership asks Neutron for the server's ports of the project, then
// the floating IPs and trunks on them (and the trunks' subports) when an IP
// asked for is no fixed IP of them, and their networks (cached): one to
// five requests.
func (c *openStackCloud) serverOwnership(ctx context.Context, srv *openstack.Server, asked []string) (*nodeaddress.CloudView, error) {
	if c.ownership == nil {
		return nil, fmt.Errorf("ownership of server %s: no Neutron client", srv.ID)
	}
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	ports, err := c.ownership.ServerPorts(ctx, srv.ID, c.projectID)
	if err != nil {
		return nil, err
	}
	v := &nodeaddress.CloudView{Server: srv, Ports: ports}
	portIDs := make([]string, 0, len(ports))
	for _, p := range ports {
		portIDs = append(portIDs, p.ID)
	}
	if len(portIDs) > 0 && needsFloatingIPs(asked, ports) {
		if err := c.wait(ctx); err != nil {
			return nil, err
		}
		if v.FloatingIPs, err = c.ownership.FloatingIPsOfPorts(ctx, portIDs); err != nil {
			return nil, err
		}
		trunks, err := c.readTrunks(ctx, portIDs)
		if err != nil {
			return nil, err
		}
		v.Trunks, v.Subports = trunks.of(ports)
	}
	if v.Networks, err = c.networks(ctx, appendNetworkIDs(appendNetworkIDs(nil, ports), v.Subports)); err != nil {
		return nil, err
	}
	return v, nil
}

// networks asks for the networks. It is not counted by the rate limit:
// through openstack.CachedNetworks a network is asked at most once a
// minute, a join burst's few networks once.
func (c *openStackCloud) networks(ctx context.Context, ids []string) ([]openstack.NetworkInfo, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return c.ownership.Networks(ctx, ids)
}

func appendNetworkIDs(ids []string, ports []openstack.Port) []string {
	for _, p := range ports {
		if !slices.Contains(ids, p.NetworkID) {
			ids = append(ids, p.NetworkID)
		}
	}
	return ids
}

func (c *openStackCloud) wait(ctx context.Context) error {
	if c.limiter == nil {
		return nil
	}
	if err := c.limiter.Wait(ctx); err != nil {
		return fmt.Errorf("wait for cloud rate limit: %w", err)
	}
	return nil
}
