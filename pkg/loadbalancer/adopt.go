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
// Service's load balancer that upstream made for this Service becomes this
// cluster's on the Service's first sync: it gets the cluster-UID tag (and
// adoptedTag, names.go), so every later lookup finds it like one Stackward
// made, its children are matched by protocol and port, and its floating IP
// is released on delete exactly when upstream would have released it.
//
// Upstream marks nothing with a cluster identity, and its names, tags and
// description derive from the cluster name and the Service's
// namespace/name alone: a second cluster of the same name in the project
// (both charts default to "kubernetes") makes the very same ones. So a
// name and a marker are not enough. Adoption also needs evidence tied to
// this Service in this cluster: its status.loadBalancer.ingress, which only
// the service controller writes (upstream's, before the switch), must hold
// the candidate's VIP or one of its floating IPs. Annotations prove
// nothing: a namespace user writes them. A candidate without that evidence
// is never adopted, never reported by Get as the Service's and never
// deleted; Ensure refuses the Service with ErrNotAdopted naming it and
// creates nothing, since creating a second load balancer of that name
// would confuse the other cluster's CCM. [LoadBalancer]
// adopt-upstream-load-balancers=false turns adoption off.

// ErrNotAdopted means load balancers that may be the Service's, made by
// the upstream CCM, cannot be told apart with certainty; nothing changes
// until an operator resolves it.
var ErrNotAdopted = errors.New("not adopting: cannot tell with certainty which load balancer the upstream CCM made for this Service")

// lookup says what find is for: what an unadoptable candidate means
// differs between them.
type lookup int

const (
	// forGet only reports; a candidate without evidence is not the Service's.
	forGet lookup = iota
	// forEnsure adopts; a candidate without evidence refuses the Service.
	forEnsure
	// forDelete adopts what has evidence (to delete it as upstream would)
	// and leaves everything else alone.
	forDelete
)

// upstreamCandidate is a load balancer with upstream's name for a Service,
// what marks it as upstream's (empty: nothing does), and whether the
// Service's status shows its address (the evidence that it is this
// Service's).
type upstreamCandidate struct {
	lb       LoadBalancer
	markers  []string
	evidence string
}

func (c upstreamCandidate) String() string {
	var why []string
	if len(c.markers) == 0 {
		why = append(why, "no upstream marker: not its name tag or description")
	} else {
		why = append(why, strings.Join(c.markers, ", "))
	}
	if c.evidence == "" {
		why = append(why, "its address is not in the Service's status.loadBalancer.ingress")
	} else {
		why = append(why, "the Service's status shows "+c.evidence)
	}
	return fmt.Sprintf("%s (%s)", c.lb.ID, strings.Join(why, "; "))
}

// upstreamMarkers are the signs that the upstream CCM made lb for a
// Service of this name and cluster name. They are necessary, never
// sufficient: another cluster of the same name makes the same ones.
func upstreamMarkers(lb *LoadBalancer, clusterName string, svc *corev1.Service) []string {
	var out []string
	name := upstreamLoadBalancerName(clusterName, refOf(svc))
	if slices.Contains(lb.Tags, name) {
		out = append(out, "name tag")
	}
	if lb.Description == upstreamDescription(clusterName, refOf(svc)) {
		out = append(out, "description")
	}
	return out
}

// ingressAddresses are the addresses the service controller published for
// svc: IPs, and hostnames (upstream's enable-ingress-hostname writes
// <ip>.<suffix>).
func ingressAddresses(svc *corev1.Service) []string {
	var out []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			out = append(out, in.IP)
		}
		if in.Hostname != "" {
			out = append(out, in.Hostname)
		}
	}
	return out
}

// shows says which of addrs the published ingress holds, "" for none. A
// hostname counts when it is the address followed by a suffix.
func shows(published []string, addrs ...string) string {
	for _, a := range addrs {
		if a == "" {
			continue
		}
		for _, p := range published {
			if p == a || strings.HasPrefix(p, a+".") {
				return "address " + a
			}
		}
	}
	return ""
}

// evidenceFor says whether svc's status shows lb's VIP or a floating IP on
// its VIP port. The floating IPs are read only when the VIP does not
// match and the Service has published something.
func (m *Manager) evidenceFor(ctx context.Context, lb *LoadBalancer, published []string) (string, error) {
	if len(published) == 0 {
		return "", nil
	}
	if e := shows(published, lb.VIPAddress); e != "" {
		return e, nil
	}
	if lb.VIPPortID == "" {
		return "", nil
	}
	fips, err := m.Neutron.FloatingIPs(ctx, lb.VIPPortID, "")
	if err != nil {
		return "", fmt.Errorf("floating IPs of VIP port %s of candidate %s: %w", lb.VIPPortID, lb.ID, err)
	}
	for _, f := range fips {
		if e := shows(published, f.Address); e != "" {
			return e, nil
		}
	}
	return "", nil
}

// isUpstreamOf says whether sharedLB should leave lb to adoption: it has
// upstream's name for this Service and no cluster's UID tag.
func (m *Manager) isUpstreamOf(lb *LoadBalancer, id Identity, svc *corev1.Service) bool {
	return m.Config.AdoptUpstream && lb.Name == upstreamLoadBalancerName(id.ClusterName, refOf(svc)) && clusterTagOf(lb) == ""
}

// fromUpstream is find's answer when the cluster has no load balancer for
// svc: the one the upstream CCM made for this very Service, if there is
// exactly one beyond doubt. For Ensure and Delete it tags that one as this
// cluster's and asks for another sync (Octavia applies the tags); for Get
// it only reports it. Load balancers of that name carrying another
// cluster's UID tag are that cluster's and play no part; untagged ones
// without evidence refuse Ensure and are nobody's business otherwise.
func (m *Manager) fromUpstream(ctx context.Context, id Identity, svc *corev1.Service, use lookup) (*LoadBalancer, error) {
	if !m.Config.AdoptUpstream {
		return nil, nil
	}
	name := upstreamLoadBalancerName(id.ClusterName, refOf(svc))
	found, err := m.Octavia.FindLoadBalancers(ctx, name, "")
	if err != nil {
		return nil, fmt.Errorf("look for the upstream CCM's load balancer %q: %w", name, err)
	}
	return m.upstreamAmong(ctx, id, svc, use, found)
}

// upstreamAmong is fromUpstream given the load balancers of upstream's
// name for the Service, however they were listed.
func (m *Manager) upstreamAmong(ctx context.Context, id Identity, svc *corev1.Service, use lookup, found []LoadBalancer) (*LoadBalancer, error) {
	if !m.Config.AdoptUpstream {
		return nil, nil
	}
	ref := refOf(svc)
	name := upstreamLoadBalancerName(id.ClusterName, ref)
	logger := klog.FromContext(ctx).WithValues("service", ref.String(), "loadBalancer", name)
	published := ingressAddresses(svc)
	var cands []upstreamCandidate
	for _, lb := range found {
		if lb.ProvisioningStatus == StatusPendingDelete {
			continue
		}
		if tag := clusterTagOf(&lb); tag != "" {
			logger.V(2).Info("Leaving another cluster's load balancer of the same name alone", "id", lb.ID, "tag", tag)
			continue
		}
		ev, err := m.evidenceFor(ctx, &lb, published)
		if err != nil {
			return nil, err
		}
		cands = append(cands, upstreamCandidate{lb: lb, markers: upstreamMarkers(&lb, id.ClusterName, svc), evidence: ev})
	}
	if len(cands) == 0 {
		return nil, nil
	}
	pick, why := choose(cands)
	if pick == nil {
		if use != forEnsure {
			// Not certainly the Service's: nothing to report or delete.
			// (An error here would keep a deleted Service's finalizer for
			// good over a load balancer that is not its own.)
			logger.V(2).Info("Leaving load balancers of the Service's name alone", "why", why, "candidates", len(cands))
			return nil, nil
		}
		return nil, notAdopted(name, why, cands)
	}
	if name != LoadBalancerName(id.ClusterName, ref) {
		// Stackward shortens names beyond 255 characters with a hash;
		// adopting would leave a load balancer later lookups cannot find.
		return nil, notAdopted(name, "its name is longer than 255 characters and was cut by upstream", cands)
	}
	if use == forGet {
		return pick, nil
	}
	// setTags names the load balancer, and a busy one is a RetryError
	// the service controller must see as such.
	if err := m.setTags(ctx, pick, adoptionTags(pick, id, ref)); err != nil {
		return nil, err
	}
	markers := markersOf(cands, pick.ID)
	logger.Info("Adopted the upstream CCM's load balancer", "id", pick.ID, "markers", markers)
	return nil, notReady(m.requeue(), ReasonAdopting, "load balancer %s (%s), made by the upstream CCM (%s), is now this cluster's", name, pick.ID, strings.Join(markers, ", "))
}

// choose picks the one candidate beyond doubt: the only one whose address
// the Service's status shows, when it also carries an upstream marker. It
// says why not otherwise.
func choose(cands []upstreamCandidate) (*LoadBalancer, string) {
	var shown []int
	for i, c := range cands {
		if c.evidence != "" {
			shown = append(shown, i)
		}
	}
	switch {
	case len(shown) == 0:
		return nil, "the Service's status.loadBalancer.ingress shows none of their addresses, so none is this Service's " +
			"(another cluster with the same --cluster-name, or an operator's); give this cluster a distinct --cluster-name"
	case len(shown) > 1:
		return nil, fmt.Sprintf("the Service's status shows the addresses of %d of them", len(shown))
	case len(cands[shown[0]].markers) == 0:
		return nil, "it carries none of upstream's markers, so it may be an operator's"
	}
	return &cands[shown[0]].lb, ""
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
