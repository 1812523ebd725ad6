package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Taking over from the upstream openstack-cloud-controller-manager. A
// Service's load balancer that upstream made for this cluster's name and
// this Service becomes this cluster's on the Service's first sync: it gets
// the cluster-UID tag (and adoptedTag, names.go), so every later lookup
// finds it like one Stackward made, its children are matched by protocol
// and port, and its floating IP is released on delete exactly when
// upstream would have released it. Upstream marks nothing with a cluster
// identity, so adoption is only ever done on certainty: a candidate must
// carry upstream's name and one of upstream's markers, and must be the
// only one. Everything else is left alone and the sync fails with
// ErrNotAdopted naming the candidates, which the service controller
// records as a Warning event on the Service; nothing is created or deleted
// meanwhile. [LoadBalancer] adopt-upstream-load-balancers=false turns this
// off.

// ErrNotAdopted means load balancers that may be the Service's, made by
// the upstream CCM, cannot be told apart with certainty; nothing changes
// until an operator resolves it.
var ErrNotAdopted = errors.New("not adopting: cannot tell with certainty which load balancer the upstream CCM made for this Service")

// upstreamCandidate is a load balancer with upstream's name for a Service,
// and what marks it as upstream's (empty: nothing does).
type upstreamCandidate struct {
	lb      LoadBalancer
	markers []string
}

func (c upstreamCandidate) String() string {
	if len(c.markers) == 0 {
		return fmt.Sprintf("%s (no upstream marker: not its name tag, description or the Service's %s)", c.lb.ID, AnnotationLoadBalancerID)
	}
	return fmt.Sprintf("%s (%s)", c.lb.ID, strings.Join(c.markers, ", "))
}

// upstreamMarkers are the signs that the upstream CCM made lb for svc of
// this cluster name.
func upstreamMarkers(lb *LoadBalancer, clusterName string, svc *corev1.Service) []string {
	var out []string
	name := upstreamLoadBalancerName(clusterName, refOf(svc))
	if slices.Contains(lb.Tags, name) {
		out = append(out, "name tag")
	}
	if lb.Description == upstreamDescription(clusterName, refOf(svc)) {
		out = append(out, "description")
	}
	if svc.Annotations[AnnotationLoadBalancerID] == lb.ID {
		out = append(out, AnnotationLoadBalancerID)
	}
	return out
}

// isUpstreamOf says whether sharedLB should leave lb to adoption: it has
// upstream's name for this Service and no cluster's UID tag.
func (m *Manager) isUpstreamOf(lb *LoadBalancer, id Identity, svc *corev1.Service) bool {
	return m.Config.AdoptUpstream && lb.Name == upstreamLoadBalancerName(id.ClusterName, refOf(svc)) && clusterTagOf(lb) == ""
}

// fromUpstream is find's answer when the cluster has no load balancer for
// svc: the one the upstream CCM made, if there is exactly one beyond
// doubt. With adopt it tags that one as this cluster's and asks for
// another sync (Octavia applies the tags); without (Get) it only reports
// it. Load balancers of that name carrying another cluster's UID tag are
// that cluster's and play no part.
func (m *Manager) fromUpstream(ctx context.Context, id Identity, svc *corev1.Service, adopt bool) (*LoadBalancer, error) {
	if !m.Config.AdoptUpstream {
		return nil, nil
	}
	ref := refOf(svc)
	name := upstreamLoadBalancerName(id.ClusterName, ref)
	found, err := m.Octavia.FindLoadBalancers(ctx, name, "")
	if err != nil {
		return nil, fmt.Errorf("look for the upstream CCM's load balancer %q: %w", name, err)
	}
	logger := klog.FromContext(ctx).WithValues("service", ref.String(), "loadBalancer", name)
	var cands []upstreamCandidate
	for _, lb := range found {
		if lb.ProvisioningStatus == StatusPendingDelete {
			continue
		}
		if tag := clusterTagOf(&lb); tag != "" {
			logger.V(2).Info("Leaving another cluster's load balancer of the same name alone", "id", lb.ID, "tag", tag)
			continue
		}
		cands = append(cands, upstreamCandidate{lb: lb, markers: upstreamMarkers(&lb, id.ClusterName, svc)})
	}
	if len(cands) == 0 {
		return nil, nil
	}
	pick, why := choose(cands, svc.Annotations[AnnotationLoadBalancerID])
	if pick == nil {
		return nil, notAdopted(name, why, cands)
	}
	if name != LoadBalancerName(id.ClusterName, ref) {
		// Stackward shortens names beyond 255 characters with a hash;
		// adopting would leave a load balancer later lookups cannot find.
		return nil, notAdopted(name, "its name is longer than 255 characters and was cut by upstream", cands)
	}
	if !adopt {
		return pick, nil
	}
	// setTags names the load balancer, and a busy one is a RetryError
	// the service controller must see as such.
	if err := m.setTags(ctx, pick, adoptionTags(pick, id, ref)); err != nil {
		return nil, err
	}
	logger.Info("Adopted the upstream CCM's load balancer", "id", pick.ID, "markers", markersOf(cands, pick.ID))
	return nil, notReady(m.requeue(), ReasonAdopting, "load balancer %s (%s), made by the upstream CCM (%s), is now this cluster's", name, pick.ID, strings.Join(markersOf(cands, pick.ID), ", "))
}

// choose picks the one candidate beyond doubt: the one the Service's
// load-balancer-id annotation names (upstream wrote it there), else the
// only candidate when it carries an upstream marker. It says why not
// otherwise.
func choose(cands []upstreamCandidate, annotated string) (*LoadBalancer, string) {
	if annotated != "" {
		for i := range cands {
			if cands[i].lb.ID == annotated {
				return &cands[i].lb, ""
			}
		}
	}
	switch {
	case len(cands) > 1:
		return nil, fmt.Sprintf("%d load balancers carry the name", len(cands))
	case len(cands[0].markers) == 0:
		return nil, "it carries none of upstream's markers, so it may be an operator's"
	}
	return &cands[0].lb, ""
}

func notAdopted(name, why string, cands []upstreamCandidate) error {
	var list []string
	for _, c := range cands {
		list = append(list, c.String())
	}
	return fmt.Errorf("%w: load balancer %q: %s; candidates: %s. Nothing is created, changed or deleted until one is removed, "+
		"or tagged %s<cluster UID> for the cluster it belongs to", ErrNotAdopted, name, why, strings.Join(list, "; "), clusterUIDTagPrefix)
}

func markersOf(cands []upstreamCandidate, id string) []string {
	for _, c := range cands {
		if c.lb.ID == id {
			return c.markers
		}
	}
	return nil
}
