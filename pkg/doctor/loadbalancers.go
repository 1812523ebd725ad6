package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stackward/stackward/pkg/loadbalancer"
	"github.com/stackward/stackward/pkg/openstack"
)

// DefaultStuckAfter is how long a load balancer may be PENDING_* before
// doctor lists it, as the CCM's --lb-stuck-after.
const DefaultStuckAfter = loadbalancer.DefaultStuckAfter

// LoadBalancerLister lists the load balancers that carry a tag.
type LoadBalancerLister interface {
	ListLoadBalancers(ctx context.Context, tag string) ([]openstack.LoadBalancer, error)
}

// StuckLoadBalancer is one of the cluster's load balancers that Octavia
// has left PENDING_* for longer than the threshold.
type StuckLoadBalancer struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Status  string    `json:"status"`
	Since   time.Time `json:"since"`
	Age     string    `json:"age"`
	Service string    `json:"service,omitempty"`
	Hint    string    `json:"hint"`
}

const stuckHint = "Octavia is not finishing the change (typically an octavia-worker stopped mid-change). " +
	"Restart octavia-worker, or have an OpenStack admin set its provisioning_status to ERROR in Octavia's database: " +
	"stackward-ccm then replaces it and keeps the Service's floating IP."

// stuckLoadBalancers lists the cluster's load balancers (those tagged
// with its UID) that have been PENDING_* for at least after, by Octavia's
// updated_at (created_at before any update). PENDING_DELETE counts too: a
// delete can be stuck as well.
func stuckLoadBalancers(ctx context.Context, lbs LoadBalancerLister, clusterUID string, now time.Time, after time.Duration) ([]StuckLoadBalancer, error) {
	list, err := lbs.ListLoadBalancers(ctx, loadbalancer.ClusterTag(clusterUID))
	if err != nil {
		return nil, fmt.Errorf("list the cluster's load balancers: %w", err)
	}
	var out []StuckLoadBalancer
	for _, lb := range list {
		since := lb.UpdatedAt
		if since.IsZero() {
			since = lb.CreatedAt
		}
		if !strings.HasPrefix(lb.ProvisioningStatus, "PENDING_") || since.IsZero() || now.Sub(since) < after {
			continue
		}
		s := StuckLoadBalancer{ID: lb.ID, Name: lb.Name, Status: lb.ProvisioningStatus, Since: since,
			Age: now.Sub(since).Round(time.Second).String(), Service: loadbalancer.CreatorOf(&lb), Hint: stuckHint}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b StuckLoadBalancer) int { return a.Since.Compare(b.Since) })
	return out, nil
}
