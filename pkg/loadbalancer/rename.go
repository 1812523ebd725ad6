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

// A change of --cluster-name. A Service's load balancer is named
// kube_service_<cluster-name>_<namespace>_<name>, and that cluster name is
// also in its description, in the Service tags (shared.go) on it and on its
// listeners, and at the end of its listeners', pools' and monitors' names.
// The cluster-UID tag and the kube_service=<namespace>/<name> tag do not
// carry it: a load balancer with this cluster's UID tag and a Service's tag
// is that Service's whatever its name says. When its name says another
// cluster name, the first sync after the change renames it: its children
// one per sync, the load balancer itself last (its new name is what the
// next sync finds it by, so no lookup stays after the rename), each
// Service tag of the old cluster name to the new one, and one Normal
// RenamedLoadBalancer Event names the old and the new name.
//
// The upstream CCM (#2552) renames whatever load balancer a Service's
// load-balancer-id annotation names when its name has another cluster
// name. Here nothing without this cluster's UID tag is renamed or retagged:
// not another cluster's (of the old name or any), not an operator's, not
// one the upstream CCM made and this cluster has not adopted. A load
// balancer made outside Kubernetes that this cluster's Services share
// keeps their old Service tags: another cluster of the old name could
// hold the very same ones.

// ErrNotRenamed means this cluster's load balancer has a name Stackward
// cannot map to the current cluster name; nothing was changed.
var ErrNotRenamed = errors.New("cannot rename the load balancer for the new cluster name")

// renaming is what renaming one load balancer changes, from its own tags:
// the Service it was made for, the cluster name its name carries and the
// name it gets.
type renaming struct {
	lb                *LoadBalancer
	creator           ServiceRef
	oldCluster, newCl string
	oldName, newName  string
	description       string
	tags              []string
}

// renamingOf says whether lb, this cluster's, needs renaming for the
// cluster name of id: nil when it does not (another cluster's, not made
// for a Service, or named for this cluster name already).
func renamingOf(id Identity, lb *LoadBalancer) (*renaming, error) {
	creator := creatorOf(lb)
	if !slices.Contains(lb.Tags, ClusterTag(id.ClusterUID)) || creator == (ServiceRef{}) {
		return nil, nil
	}
	want := LoadBalancerName(id.ClusterName, creator)
	if lb.Name == want {
		return nil, nil
	}
	old, ok := oldClusterName(lb, creator)
	if !ok {
		return nil, fmt.Errorf("%w %s (%s): it carries this cluster's UID tag and Service %s's tag, but its name says no cluster name "+
			"(not %s<cluster-name>_%s_%s, or shortened with a hash); rename it to %q by hand", ErrNotRenamed, lb.Name, lb.ID, creator, ownerPrefix, creator.Namespace, creator.Name, want)
	}
	r := &renaming{lb: lb, creator: creator, oldCluster: old, newCl: id.ClusterName, oldName: lb.Name, newName: want}
	r.description = lb.Description
	switch lb.Description {
	case loadBalancerDescription(Identity{ClusterName: old, ClusterUID: id.ClusterUID}, creator):
		r.description = loadBalancerDescription(id, creator)
	case upstreamDescription(old, creator):
		r.description = upstreamDescription(id.ClusterName, creator)
	}
	r.tags = r.retag(lb.Tags)
	return r, nil
}

// oldClusterName reads the cluster name from the name of creator's load
// balancer, kube_service_<cluster>_<namespace>_<name>. A name shortened
// with a hash (names.go's fit) no longer says it.
func oldClusterName(lb *LoadBalancer, creator ServiceRef) (string, bool) {
	rest, ok := strings.CutPrefix(lb.Name, ownerPrefix)
	if !ok {
		return "", false
	}
	old, ok := strings.CutSuffix(rest, "_"+creator.Namespace+"_"+creator.Name)
	return old, ok && old != ""
}

// retag maps each Service tag of the old cluster name to the new one,
// keeping every other tag and dropping repeats.
func (r *renaming) retag(tags []string) []string {
	var out []string
	for _, t := range tags {
		t = r.retagOne(t)
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// retagOne is kube_service_<new>_<namespace>_<name> for
// kube_service_<old>_<namespace>_<name>, and t itself for anything else.
func (r *renaming) retagOne(t string) string {
	rest, ok := strings.CutPrefix(t, ownerPrefix+r.oldCluster+"_")
	if !ok {
		return t
	}
	// Namespaces and Service names are DNS labels: no "_" in either.
	ns, name, ok := strings.Cut(rest, "_")
	if !ok || ns == "" || name == "" || strings.Contains(name, "_") {
		return t
	}
	return ownerTag(r.newCl, ServiceRef{Namespace: ns, Name: name})
}

// rechild is a child's name for the new cluster name: names.go ends each
// with the name of the load balancer of the Service it serves (the
// creator's, or a sharer's own), kube_service_<cluster>_<namespace>_<name>,
// and that tail gets the new cluster name. A name that does not end so
// (shortened, or someone else's choice) is left as it is.
func (r *renaming) rechild(name string) string {
	i := strings.LastIndex(name, "_"+ownerPrefix+r.oldCluster+"_")
	if i < 0 {
		return name
	}
	tail := name[i+1:]
	if t := r.retagOne(tail); t != tail {
		return fit(name[:i] + "_" + t)
	}
	return name
}

// renameStep makes the next change of the rename: a listener (name and
// Service tags), a pool or a monitor (name), or at last the load balancer
// (name, description, tags). It returns a RetryError after each change,
// a wait on the load balancer (watch.go) so the next step comes as soon as
// Octavia has settled; the last one carries ReasonRenamed, which becomes
// the Service's Normal Event.
func (m *Manager) renameStep(ctx context.Context, id Identity, svc *corev1.Service, r *renaming) error {
	lb := r.lb
	switch lb.ProvisioningStatus {
	case StatusActive:
	case StatusError:
		return fmt.Errorf("load balancer %s (%s) to rename for cluster name %q: %w", lb.Name, lb.ID, r.newCl, ErrProvisioningError)
	default:
		return m.waitFor(svc, id, lb, ReasonWaitingForOctavia, "load balancer %s (%s), to be renamed %s, is %s", lb.Name, lb.ID, r.newName, lb.ProvisioningStatus)
	}
	unlock := m.lockTags(lb.ID) // Service tags change: shared.go's writers wait
	defer unlock()
	tree, err := m.Octavia.Tree(ctx, lb.ID)
	if err != nil {
		return fmt.Errorf("read load balancer %s (%s) to rename it: %w", lb.Name, lb.ID, err)
	}
	steps := r.childSteps(tree)
	logger := klog.FromContext(ctx).WithValues("service", refOf(svc).String(), "loadBalancer", lb.Name, "id", lb.ID, "newName", r.newName)
	if len(steps) > 0 {
		logger.Info("Renaming load balancer for the new cluster name", "step", steps[0].What, "queued", len(steps)-1)
		if err := m.runRename(ctx, id, svc, lb, steps[0]); err != nil {
			return err
		}
		return m.waitFor(svc, id, lb, ReasonRenaming, "load balancer %s (%s) is being renamed %s for cluster name %q: %s; %d more changes queued",
			lb.Name, lb.ID, r.newName, r.newCl, steps[0].What, len(steps))
	}
	// Tags may have changed since lb was read (a sharer joined): read them
	// again under the lock.
	cur, err := m.Octavia.GetLoadBalancer(ctx, lb.ID)
	if err != nil {
		return fmt.Errorf("read load balancer %s (%s) to rename it: %w", lb.Name, lb.ID, err)
	}
	last := step{What: "rename the load balancer", do: func(ctx context.Context, o Octavia) error {
		return o.RenameLoadBalancer(ctx, lb.ID, r.newName, r.description, r.retag(cur.Tags))
	}}
	if err := m.runRename(ctx, id, svc, lb, last); err != nil {
		return err
	}
	logger.Info("Renamed load balancer for the new cluster name", "oldCluster", r.oldCluster, "cluster", r.newCl)
	return m.waitFor(svc, id, lb, ReasonRenamed, "load balancer %s (%s) renamed %s -> %s: the cluster name changed from %q to %q",
		r.oldName, lb.ID, r.oldName, r.newName, r.oldCluster, r.newCl)
}

func (m *Manager) runRename(ctx context.Context, id Identity, svc *corev1.Service, lb *LoadBalancer, s step) error {
	if err := s.do(ctx, m.Octavia); err != nil {
		if openstack.IsBusy(err) {
			return m.waitFor(svc, id, lb, ReasonWaitingForOctavia, "load balancer %s: %s: Octavia says it is busy", lb.Name, s.What)
		}
		return fmt.Errorf("load balancer %s (%s): %s: %w", lb.Name, lb.ID, s.What, err)
	}
	return nil
}

// childSteps are the renames of lb's listeners, pools and monitors that
// carry the old name or old Service tags, in a stable order.
func (r *renaming) childSteps(tree *Tree) []step {
	var out []step
	ls := slices.Clone(tree.Listeners)
	slices.SortFunc(ls, func(a, b Listener) int { return strings.Compare(a.ID, b.ID) })
	for _, l := range ls {
		name, tags := r.rechild(l.Name), r.retag(l.Tags)
		if name != l.Name || !slices.Equal(tags, l.Tags) {
			id := l.ID
			out = append(out, step{What: fmt.Sprintf("rename listener %s to %s", id, name), do: func(ctx context.Context, o Octavia) error {
				return o.RenameListener(ctx, id, name, tags)
			}})
		}
	}
	ids := make([]string, 0, len(tree.Pools))
	for id := range tree.Pools {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		p := tree.Pools[id]
		if mon := p.Monitor; mon != nil {
			if name := r.rechild(mon.Name); name != mon.Name {
				monID := mon.ID
				out = append(out, step{What: fmt.Sprintf("rename health monitor %s to %s", monID, name), do: func(ctx context.Context, o Octavia) error {
					return o.RenameMonitor(ctx, monID, name)
				}})
			}
		}
		if name := r.rechild(p.Name); name != p.Name {
			poolID := p.ID
			out = append(out, step{What: fmt.Sprintf("rename pool %s to %s", poolID, name), do: func(ctx context.Context, o Octavia) error {
				return o.RenamePool(ctx, poolID, name)
			}})
		}
	}
	return out
}

// staleNames is what one scan of this cluster's load balancers found
// named for another cluster name: their IDs by the Service each was made
// for. The cluster name changes only with a restart, and every load
// balancer this process makes has the current name, so one list per
// process (and cluster name) finds them all, and a Service without a load
// balancer (a new one) costs no call for them.
type staleNames struct {
	mu               sync.Mutex
	clusterName, uid string // scanned for; "" not yet
	byService        map[ServiceRef][]string
}

// staleFor returns the IDs the scan found for ref, scanning first when it
// has not run for id; concurrent callers wait for the one scan.
func (m *Manager) staleFor(ctx context.Context, id Identity, ref ServiceRef) ([]string, error) {
	s := &m.stale
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clusterName != id.ClusterName || s.uid != id.ClusterUID {
		lbs, err := m.Octavia.ListLoadBalancers(ctx, ClusterTag(id.ClusterUID))
		if err != nil {
			return nil, fmt.Errorf("list this cluster's load balancers for any named for an older cluster name: %w", err)
		}
		s.byService = map[ServiceRef][]string{}
		for _, lb := range lbs {
			creator := creatorOf(&lb)
			if creator == (ServiceRef{}) || lb.ProvisioningStatus == StatusPendingDelete || lb.Name == LoadBalancerName(id.ClusterName, creator) {
				continue
			}
			s.byService[creator] = append(s.byService[creator], lb.ID)
		}
		s.clusterName, s.uid = id.ClusterName, id.ClusterUID
		if n := len(s.byService); n > 0 {
			klog.FromContext(ctx).Info("Found load balancers named for another cluster name; each is renamed on its Service's next sync", "services", n, "cluster", id.ClusterName)
		}
	}
	return slices.Clone(s.byService[ref]), nil
}

// dropStale forgets a load balancer the scan found for ref once it is gone
// or named for the current cluster name.
func (m *Manager) dropStale(ref ServiceRef, lbID string) {
	s := &m.stale
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byService[ref] = slices.DeleteFunc(s.byService[ref], func(id string) bool { return id == lbID })
	if len(s.byService[ref]) == 0 {
		delete(s.byService, ref)
	}
}

// underOldName is find's answer when no load balancer has the Service's
// name: the one the scan found with this cluster's UID tag and the
// Service's tag under a name of another cluster name, read again. Get
// only reports it; Ensure and Delete rename it first (one change per
// sync). One being deleted is gone already; two such are refused with
// ErrDuplicate, unchanged.
func (m *Manager) underOldName(ctx context.Context, id Identity, svc *corev1.Service, use lookup) (*LoadBalancer, error) {
	ref := refOf(svc)
	ids, err := m.staleFor(ctx, id, ref)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	var lbs []LoadBalancer
	for _, lbID := range ids {
		lb, err := m.Octavia.GetLoadBalancer(ctx, lbID)
		switch {
		case errors.Is(err, openstack.ErrNotFound):
			m.dropStale(ref, lbID)
			continue
		case err != nil:
			return nil, fmt.Errorf("read load balancer %s of Service %s, named for an older cluster name: %w", lbID, ref, err)
		}
		if !slices.Contains(lb.Tags, ClusterTag(id.ClusterUID)) || creatorOf(lb) != ref || lb.ProvisioningStatus == StatusPendingDelete ||
			lb.Name == LoadBalancerName(id.ClusterName, ref) {
			m.dropStale(ref, lbID)
			continue
		}
		lbs = append(lbs, *lb)
	}
	switch {
	case len(lbs) == 0:
		return nil, nil
	case len(lbs) > 1:
		var list []string
		for _, lb := range lbs {
			list = append(list, lb.Name+" ("+lb.ID+")")
		}
		return nil, fmt.Errorf("%w %q under older cluster names: %s; nothing is renamed until an operator deletes all but one",
			ErrDuplicate, LoadBalancerName(id.ClusterName, ref), strings.Join(list, ", "))
	}
	lb := &lbs[0]
	if use == forGet {
		return lb, nil
	}
	return m.renameIfStale(ctx, id, svc, lb)
}

// renameIfStale renames lb, this cluster's load balancer, when its name has
// another cluster name, and returns it when it has this one. A load
// balancer in ERROR is left to the pipeline (recreate.go replaces it under
// the new name).
func (m *Manager) renameIfStale(ctx context.Context, id Identity, svc *corev1.Service, lb *LoadBalancer) (*LoadBalancer, error) {
	r, err := renamingOf(id, lb)
	if err != nil || r == nil {
		return lb, err
	}
	if lb.ProvisioningStatus == StatusError {
		return lb, nil
	}
	// Only the Service it was made for, or one whose Service tag is on it,
	// renames it.
	ref := refOf(svc)
	if r.creator != ref && !slices.Contains(r.tags, ownerTag(id.ClusterName, ref)) {
		return lb, nil
	}
	return nil, m.renameStep(ctx, id, svc, r)
}
