package approver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/time/rate"

	"github.com/stackward/stackward/pkg/openstack"
)

// Instance is what the cloud says about one node's instance: everything
// the cloud checks read, from one read started after the request was
// observed. Data about the instance from other services (its ports and
// floating IPs) belongs here too, so that the checks keep reading one value.
type Instance struct {
	Server *openstack.Server
}

// CloudOptions shape the approver's cloud lookups.
type CloudOptions struct {
	// QPS and Burst limit cloud operations (a targeted lookup, or one
	// listing answering a whole batch of requests), not requests; QPS 0
	// means no limit.
	QPS   float64
	Burst int
	// Window is the least time between two lookups' starts: requests
	// arriving meanwhile wait and share one listing. 0 takes
	// DefaultCoalesceWindow; negative means back to back.
	Window time.Duration
}

// NewOpenStackCloud returns the Cloud that asks Nova through compute.
// Concurrent lookups are coalesced: one project listing started after all
// of them were asked answers them all, while a lone lookup is a targeted
// GET. It deliberately does not use the CCM's ServerCache: an approval
// rests on what the cloud said after the request was made, never on a
// listing from before (a floating IP just moved to another server must not
// be approved for the old one).
func NewOpenStackCloud(compute openstack.Compute, region string, opts CloudOptions) Cloud {
	c := &openStackCloud{compute: compute, region: region}
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
	c.batches = openstack.NewCoalescer(window, 0, c.fetch)
	return c
}

type openStackCloud struct {
	compute openstack.Compute
	region  string
	limiter *rate.Limiter // nil: unlimited
	batches *openstack.Coalescer[nodeKey, lookupResult]
}

// nodeKey is what identifies a lookup: the Node's providerID, else its name.
type nodeKey struct{ providerID, nodeName string }

type lookupResult struct {
	server *openstack.Server
	err    error
}

func (c *openStackCloud) InstanceForNode(ctx context.Context, providerID, nodeName string) (*Instance, error) {
	if providerID != "" && c.region != "" {
		if region, _, err := openstack.ParseProviderID(providerID); err == nil && region != "" && region != c.region {
			// Another region's instance may well exist: this cloud.conf
			// cannot tell, so no verdict (the CCM answers the same way).
			return nil, fmt.Errorf("provider ID %s is in region %q, this cloud.conf is for region %q", providerID, region, c.region)
		}
	}
	res, err := c.batches.Do(ctx, nodeKey{providerID: providerID, nodeName: nodeName})
	if err == nil {
		err = res.err
	}
	if err != nil {
		return nil, fmt.Errorf("server for node %q: %w", nodeName, err)
	}
	return &Instance{Server: res.server}, nil
}

// fetch answers one batch: a lone key with a targeted lookup, several with
// one listing of the project (and a targeted lookup for any key the
// listing does not hold, rare: a request naming a server of no one's).
func (c *openStackCloud) fetch(ctx context.Context, b openstack.Batch[nodeKey]) (map[nodeKey]lookupResult, error) {
	out := make(map[nodeKey]lookupResult, len(b.Keys))
	if len(b.Keys) == 1 {
		k := b.Keys[0]
		srv, err := c.targeted(ctx, k)
		out[k] = lookupResult{srv, err}
		return out, nil
	}
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	snap, err := openstack.TakeSnapshot(ctx, c.compute)
	if err != nil {
		return nil, err
	}
	for _, k := range b.Keys {
		srv, err := snap.ServerForNode(k.providerID, k.nodeName)
		if errors.Is(err, openstack.ErrNotListed) {
			srv, err = c.targeted(ctx, k)
		}
		out[k] = lookupResult{srv, err}
	}
	return out, nil
}

func (c *openStackCloud) targeted(ctx context.Context, k nodeKey) (*openstack.Server, error) {
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	return openstack.ServerForNode(ctx, c.compute, k.providerID, k.nodeName)
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
