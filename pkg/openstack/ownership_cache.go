package openstack

import (
	"context"
	"sync"
	"time"
)

// CachedNetworks returns an Ownership whose Networks answers from a cache
// of at most ttl age, asking Neutron only for networks it has not seen
// recently; ports and floating IPs are always asked. A join burst has
// every node on the same few networks, so this saves one request per
// approval. A network's project and sharing change only by an
// administrator and its name rarely; within ttl a rename is not seen.
func CachedNetworks(o Ownership, ttl time.Duration) Ownership {
	return &networkCache{Ownership: o, ttl: ttl, byID: map[string]cachedNetwork{}, now: time.Now}
}

type cachedNetwork struct {
	info NetworkInfo
	at   time.Time
}

type networkCache struct {
	Ownership
	ttl  time.Duration
	now  func() time.Time
	mu   sync.Mutex
	byID map[string]cachedNetwork
}

func (c *networkCache) Networks(ctx context.Context, ids []string) ([]NetworkInfo, error) {
	now := c.now()
	var out []NetworkInfo
	var missing []string
	c.mu.Lock()
	for _, id := range ids {
		if n, ok := c.byID[id]; ok && now.Sub(n.at) < c.ttl {
			out = append(out, n.info)
		} else {
			missing = append(missing, id)
		}
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	fresh, err := c.Ownership.Networks(ctx, missing)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	for _, n := range fresh {
		c.byID[n.ID] = cachedNetwork{info: n, at: now}
	}
	c.mu.Unlock()
	return append(out, fresh...), nil
}
