package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/openstack"
)

// Shared load balancers, as the upstream CCM does them. A Service with the
// annotation loadbalancer.openstack.org/load-balancer-id adds its
// listeners to that load balancer instead of creating one: a load balancer
// created for another Service of this cluster, or one created outside
// Kubernetes. Each Service using a load balancer is a tag on it,
// kube_service_<cluster-name>_<namespace>_<name> (the name its own load
// balancer would have), and each of its listeners carries that tag too, so
// a Service only ever plans, changes and deletes its own listeners.
// [LoadBalancer] max-shared-lb bounds the Services on one load balancer.
// The load balancer is deleted when the last Service using it goes, and
// only if this cluster created it; one made outside keeps everything but
// our listeners.

// AnnotationLoadBalancerID names an existing load balancer to use.
const AnnotationLoadBalancerID = "loadbalancer.openstack.org/load-balancer-id"

// ownerPrefix starts every Service tag on a load balancer.
const ownerPrefix = "kube_service_"

// ErrSharing means a Service cannot use the load balancer it names.
var ErrSharing = errors.New("cannot share the load balancer")

// ownerTag is a Service's tag on a load balancer it uses.
func ownerTag(clusterName string, svc ServiceRef) string { return LoadBalancerName(clusterName, svc) }

// owners are the Services using a load balancer. One this cluster created
// before Stackward tagged creators has no Service tag and only untagged
// listeners: its name stands for its creator (a sharer joining writes that
// tag down). tree may be nil when only the tags matter.
func owners(lb *LoadBalancer, clusterUID string, tree *Tree) []string {
	var out []string
	for _, t := range lb.Tags {
		if strings.HasPrefix(t, ownerPrefix) {
			out = append(out, t)
		}
	}
	if len(out) == 0 && tree != nil && createdByCluster(lb, clusterUID) &&
		slices.ContainsFunc(tree.Listeners, func(l Listener) bool { return !hasOwnerTag(l) }) {
		out = append(out, lb.Name)
	}
	return out
}

func hasOwnerTag(l Listener) bool {
	return slices.ContainsFunc(l.Tags, func(t string) bool { return strings.HasPrefix(t, ownerPrefix) })
}

func createdByCluster(lb *LoadBalancer, clusterUID string) bool {
	return clusterUID != "" && slices.Contains(lb.Tags, ClusterTag(clusterUID)) && strings.HasPrefix(lb.Name, ownerPrefix)
}

// ownListener says whether a listener belongs to the Service owner: it
// carries its tag, or it carries no Service tag and the Service created
// the load balancer (listeners made before sharing existed).
func ownListener(l Listener, owner string, creator bool) bool {
	if slices.Contains(l.Tags, owner) {
		return true
	}
	return creator && !hasOwnerTag(l)
}

// ownPart is the part of tree that belongs to the Service of spec. A port
// spec wants that another Service's listener holds is a conflict, reported
// rather than fought over.
func ownPart(lb *LoadBalancer, tree *Tree, spec Spec) (*Tree, error) {
	creator := lb.Name == spec.Name
	own := &Tree{Pools: tree.Pools}
	taken := map[listenerKey]Listener{}
	for _, l := range tree.Listeners {
		if ownListener(l, spec.Owner, creator) {
			own.Listeners = append(own.Listeners, l)
		} else {
			taken[listenerKey{l.Protocol, l.Port}] = l
		}
	}
	var errs []error
	for _, l := range spec.Listeners {
		if other, ok := taken[listenerKey{l.Protocol, l.Port}]; ok {
			errs = append(errs, fmt.Errorf("%w %s (%s): port %s is used by another Service's listener %s (tags %v)",
				ErrSharing, lb.Name, lb.ID, keyOf(l.Protocol, l.Port), other.ID, other.Tags))
		}
	}
	return own, errors.Join(errs...)
}

// sharedLB returns the load balancer the Service's load-balancer-id
// annotation names, or nil without the annotation or when it names the
// Service's own load balancer (upstream writes that annotation back).
func (m *Manager) sharedLB(ctx context.Context, id Identity, svc *corev1.Service) (*LoadBalancer, error) {
	lbID := svc.Annotations[AnnotationLoadBalancerID]
	if lbID == "" {
		return nil, nil
	}
	lb, err := m.Octavia.GetLoadBalancer(ctx, lbID)
	if err != nil {
		if errors.Is(err, openstack.ErrNotFound) {
			return nil, fmt.Errorf("%w (%w)", &InvalidAnnotationError{Annotation: AnnotationLoadBalancerID, Value: lbID, Reason: "no such load balancer"}, err)
		}
		return nil, fmt.Errorf("read load balancer %s (%s): %w", lbID, AnnotationLoadBalancerID, err)
	}
	if lb.Name == LoadBalancerName(id.ClusterName, refOf(svc)) && createdByCluster(lb, id.ClusterUID) {
		return nil, nil
	}
	if m.isUpstreamOf(lb, id, svc) {
		return nil, nil // upstream's own for this Service: find adopts it
	}
	return lb, nil
}

func (m *Manager) setTags(ctx context.Context, lb *LoadBalancer, tags []string) error {
	if err := m.Octavia.SetLoadBalancerTags(ctx, lb.ID, tags); err != nil {
		if openstack.IsBusy(err) {
			return m.refusedBy(lb, "set its tags")
		}
		return fmt.Errorf("tags of load balancer %s (%s): %w", lb.Name, lb.ID, err)
	}
	return nil
}

// leaveShared takes a Service off a load balancer other Services still
// use, or that this cluster did not create: its listeners one per sync,
// then its tag. It reports whole when the Service is the last user of a
// load balancer this cluster created, which the caller then deletes as a
// whole. A listener tagged for another Service keeps the load balancer
// even when that Service's tag is missing: Octavia has no compare-and-swap
// on tags, so two Services joining at once may lose one.
func (m *Manager) leaveShared(ctx context.Context, id Identity, svc *corev1.Service, lb *LoadBalancer) (whole bool, err error) {
	owner := ownerTag(id.ClusterName, refOf(svc))
	switch lb.ProvisioningStatus {
	case StatusActive, StatusError:
	case StatusPendingDelete:
		return false, nil
	default:
		return false, notReady(m.requeue(), ReasonWaitingForOctavia, "load balancer %s (%s) is %s; leaving it when it settles", lb.Name, lb.ID, lb.ProvisioningStatus)
	}
	tree, err := m.Octavia.Tree(ctx, lb.ID)
	if err != nil {
		return false, fmt.Errorf("read load balancer %s: %w", lb.ID, err)
	}
	users := owners(lb, id.ClusterUID, tree)
	others := slices.DeleteFunc(slices.Clone(users), func(t string) bool { return t == owner })
	own, _ := ownPart(lb, tree, Spec{Name: LoadBalancerName(id.ClusterName, refOf(svc)), Owner: owner})
	foreign := len(tree.Listeners) - len(own.Listeners)
	// Only one of its users (by tag, or by a listener of its own when
	// its tag was lost) may delete it: a Service that names it but never
	// joined (refused by max-shared-lb, say) only ever leaves.
	member := slices.Contains(users, owner) || len(own.Listeners) > 0
	if member && len(others) == 0 && foreign == 0 && createdByCluster(lb, id.ClusterUID) {
		return true, nil
	}
	// Monitors of other Services (or of a load balancer made outside)
	// that this Service had removed for a listener create it never got to
	// make come back before it leaves (ovnmonitors.go).
	mine := map[string]bool{}
	for _, l := range own.Listeners {
		mine[l.DefaultPoolID] = true
	}
	restores, untags := restoreSteps(tree, mine, nil)
	if steps := slices.Concat(plan(lb.ID, own, Spec{}), restores, untags); len(steps) > 0 {
		klog.FromContext(ctx).Info("Removing the Service's listeners from a shared load balancer", "service", refOf(svc).String(), "loadBalancer", lb.Name, "id", lb.ID, "step", steps[0].What, "queued", len(steps)-1)
		if err := m.runStep(ctx, lb, steps[0], Spec{}); err != nil {
			return false, err
		}
		return false, notReady(m.requeue(), ReasonApplyingChanges, "shared load balancer %s (%s): %d more changes queued", lb.Name, lb.ID, len(steps)-1+steps[0].leaves)
	}
	keep := lb.Name == LoadBalancerName(id.ClusterName, refOf(svc)) && asksToKeep(svc)
	if slices.Contains(lb.Tags, owner) || (keep && !slices.Contains(lb.Tags, keptTag)) {
		// The group goes before the tag: once the tag is gone, Get no
		// longer sees the Service here and the service controller drops
		// its finalizer, so a group delete failing after it would leave
		// the group on the node ports for good.
		if err := m.deleteSecurityGroup(ctx, svc); err != nil {
			return false, err
		}
		last, remaining, err := m.dropOwnerTag(ctx, id, lb, owner, foreign, keep)
		if err != nil || last {
			return last, err
		}
		klog.FromContext(ctx).Info("Left shared load balancer", "service", refOf(svc).String(), "loadBalancer", lb.Name, "id", lb.ID, "remaining", remaining, "foreignListeners", foreign)
	}
	return false, nil
}

// dropOwnerTag removes the Service's tag from the load balancer's current
// tags (read again, not the ones the sync began with), one tag change per
// load balancer at a time in this process. Octavia has no compare-and-swap
// on tags: two Services of one load balancer deleted at once (concurrent
// service syncs) each wrote back the tags they had read, each kept the
// other's tag, and the load balancer outlived both. When no other
// Service's tag is left on a load balancer this cluster created and no
// other listener is on it, the Service is its last user: last is true,
// nothing is written, and the caller deletes the whole load balancer.
//
// keep (the creator leaving while asking to keep its address) leaves
// keptTag on the load balancer, so that the last of the other Services,
// of any namespace, detaches the floating IP instead of releasing it.
func (m *Manager) dropOwnerTag(ctx context.Context, id Identity, lb *LoadBalancer, owner string, foreign int, keep bool) (last bool, remaining int, err error) {
	unlock := m.lockTags(lb.ID)
	defer unlock()
	fresh, err := m.Octavia.GetLoadBalancer(ctx, lb.ID)
	if err != nil {
		return false, 0, fmt.Errorf("read load balancer %s (%s): %w", lb.Name, lb.ID, err)
	}
	others := slices.DeleteFunc(owners(fresh, id.ClusterUID, nil), func(t string) bool { return t == owner })
	if len(others) == 0 && foreign == 0 && createdByCluster(fresh, id.ClusterUID) {
		return true, 0, nil
	}
	addKept := keep && !slices.Contains(fresh.Tags, keptTag)
	if !slices.Contains(fresh.Tags, owner) && !addKept {
		return false, len(others), nil
	}
	tags := slices.DeleteFunc(slices.Clone(fresh.Tags), func(t string) bool { return t == owner })
	if addKept {
		tags = append(tags, keptTag)
	}
	return false, len(others), m.setTags(ctx, fresh, tags)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// lockTags serializes the tag changes of one load balancer.
func (m *Manager) lockTags(lbID string) (unlock func()) {
	m.mu.Lock()
	if m.tagLocks == nil {
		m.tagLocks = map[string]*sync.Mutex{}
	}
	l, ok := m.tagLocks[lbID]
	if !ok {
		l = &sync.Mutex{}
		m.tagLocks[lbID] = l
	}
	m.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// deleteShared is Delete for a Service sharing another's load balancer.
func (m *Manager) deleteShared(ctx context.Context, id Identity, svc *corev1.Service, lb *LoadBalancer) error {
	whole, err := m.leaveShared(ctx, id, svc, lb)
	if err != nil {
		return err
	}
	if whole {
		if err := m.deleteLB(ctx, id, lb, keepFloatingIP(svc)); err != nil {
			return err
		}
		klog.FromContext(ctx).Info("Deleted shared load balancer with its last Service", "service", refOf(svc).String(), "loadBalancer", lb.Name, "id", lb.ID)
	}
	return m.deleteSecurityGroup(ctx, svc)
}

// getShared is Get for a Service whose load-balancer-id names another
// load balancer: it exists while the Service may use it and is one of its
// users. Otherwise the Service has nothing there, though it may still have
// its security group (leftovers): a join that failed half way, or a leave
// whose group delete failed after its tag was gone.
func (m *Manager) getShared(ctx context.Context, id Identity, svc *corev1.Service, r route) (*corev1.LoadBalancerStatus, bool, error) {
	lb := r.shared
	if r.refused != nil || lb.ProvisioningStatus == StatusPendingDelete || !isUser(lb, id, svc) {
		left, err := m.leftovers(ctx, svc)
		return nil, left, err
	}
	fips, err := m.Neutron.FloatingIPs(ctx, lb.VIPPortID, "")
	if err != nil {
		return nil, true, fmt.Errorf("floating IPs of VIP port %s: %w", lb.VIPPortID, err)
	}
	return status(lb, fips, serviceFamilies(svc)), true, nil
}

// claim keeps the tags a Service's own load balancer carries for it: its
// creator's tag when other Services use it and the tag is missing (the
// creator Service was deleted and made again meanwhile), so that the last
// of the others does not delete it; and the consent tags of its
// shared-with-namespaces annotation (consent.go). It reports whether it
// changed the load balancer.
func (m *Manager) claim(ctx context.Context, lb *LoadBalancer, spec Spec, consent []string) (bool, error) {
	tags := slices.DeleteFunc(slices.Clone(lb.Tags), func(t string) bool { return strings.HasPrefix(t, consentPrefix) })
	explicit := owners(lb, "", nil)
	if len(explicit) > 0 && !slices.Contains(explicit, spec.Owner) {
		tags = append(tags, spec.Owner)
	}
	tags = append(tags, consent...)
	if sameSet(tags, lb.Tags) {
		return false, nil
	}
	if err := m.setTags(ctx, lb, tags); err != nil {
		return false, err
	}
	klog.FromContext(ctx).Info("Updated the Service's tags on its load balancer", "loadBalancer", lb.Name, "id", lb.ID, "services", len(owners(&LoadBalancer{Tags: tags}, "", nil)), "sharedWith", consent)
	return true, nil
}
