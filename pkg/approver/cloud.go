package approver

import (
	"context"
	"fmt"

	"golang.org/x/time/rate"

	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/openstack"
)

// rateLimitedCloud spaces the approver's cloud calls so that a join burst
// of many nodes cannot exhaust the project's API quota: requests wait their
// turn rather than fail.
type rateLimitedCloud struct {
	cloud   Cloud
	limiter *rate.Limiter
}

// RateLimited returns cloud limited to qps calls per second with bursts of
// burst; qps <= 0 returns cloud unchanged.
func RateLimited(cloud Cloud, qps float64, burst int) Cloud {
	if qps <= 0 {
		return cloud
	}
	if burst < 1 {
		burst = 1
	}
	return &rateLimitedCloud{cloud: cloud, limiter: rate.NewLimiter(rate.Limit(qps), burst)}
}

func (c *rateLimitedCloud) ServerForNode(ctx context.Context, providerID, nodeName string) (*openstack.Server, error) {
	if err := c.limiter.Wait(ctx); err != nil {
		return nil, fmt.Errorf("wait for cloud rate limit: %w", err)
	}
	return c.cloud.ServerForNode(ctx, providerID, nodeName)
}

// ServerOwnership is two Neutron requests (ports, floating IPs; networks
// come from a cache, openstack.CachedNetworks); it waits for as many
// tokens, or the whole burst if smaller.
func (c *rateLimitedCloud) ServerOwnership(ctx context.Context, srv *openstack.Server) (nodeaddress.CloudView, error) {
	if err := c.limiter.WaitN(ctx, min(ownershipCalls, c.limiter.Burst())); err != nil {
		return nodeaddress.CloudView{}, fmt.Errorf("wait for cloud rate limit: %w", err)
	}
	return c.cloud.ServerOwnership(ctx, srv)
}

// ownershipCalls is the number of Neutron requests of one ServerOwnership
// in the steady state.
const ownershipCalls = 2
