package loadbalancer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/openstack"
)

// The one reconcile of a Service's load balancer, whichever it is: its
// own (made by Stackward or adopted from the upstream CCM) or one it
// shares through load-balancer-id. Ensure and Update differ only in what
// they may do beyond the tree (create a load balancer, its floating IP,
// check what cannot change): a node change never touches those.
//
//	prepare: options → route (own, shared, refused) → provider →
//	         VIP and floating network (own only) → member subnet → spec
//	apply:   the next change in Octavia (the Service's tag, its consent
//	         tags, one listener, pool, member set or monitor), 409 and
//	         busy handled once, progress a Normal Event
//	finish:  node addresses → security group → status

// syncMode says which of the service controller's calls a sync serves.
type syncMode int

const (
	// ensuring: EnsureLoadBalancer, which creates what is missing.
	ensuring syncMode = iota
	// updating: UpdateLoadBalancer (nodes changed), which never creates a
	// load balancer or touches its floating IP.
	updating
)

// Ensure creates or updates the Service's load balancer. Each call makes
// at most one change in Octavia (plus the floating IP in Neutron) and
// returns a RetryError while more remain or Octavia is busy.
func (m *Manager) Ensure(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	return m.sync(ctx, clusterName, svc, nodes, ensuring)
}

// Update brings the members up to date with nodes: Ensure's tree sync
// without creating anything or touching the floating IP.
func (m *Manager) Update(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) error {
	_, err := m.sync(ctx, clusterName, svc, nodes, updating)
	return err
}

// target is a prepared sync: the load balancer (nil: none yet), whether
// the Service shares it, and the Service's wanted part of it.
type target struct {
	lb     *LoadBalancer
	shared bool
	o      *options
	spec   Spec
}

// what names the target in messages.
func (t *target) what() string {
	if t.shared {
		return "shared load balancer"
	}
	return "load balancer"
}

func (m *Manager) sync(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node, mode syncMode) (*corev1.LoadBalancerStatus, error) {
	deadline := time.Now().Add(m.syncWait())
	for {
		st, err := m.syncOnce(ctx, clusterName, svc, nodes, mode)
		if !m.settledInSync(ctx, svc, err, deadline) {
			return st, err
		}
	}
}

// syncOnce is one pass of sync: the next change, or the wait for Octavia.
func (m *Manager) syncOnce(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node, mode syncMode) (*corev1.LoadBalancerStatus, error) {
	if err := m.stillBusy(ctx, svc); err != nil {
		return nil, err // waiting for Octavia, known without a call of its own (watch.go)
	}
	id, t, err := m.prepare(ctx, clusterName, svc, nodes, mode)
	if err != nil {
		return nil, err
	}
	if t.lb == nil {
		return nil, m.create(ctx, id, svc, t)
	}
	st, err := m.apply(ctx, clusterName, id, svc, nodes, mode, t)
	return st, m.watchBusy(svc, id, t.lb, err)
}

// apply brings a prepared target's load balancer one change closer to the
// spec and, once it is there, finishes: node addresses, security group,
// status.
func (m *Manager) apply(ctx context.Context, clusterName string, id Identity, svc *corev1.Service, nodes []*corev1.Node, mode syncMode, t *target) (*corev1.LoadBalancerStatus, error) {
	lb, spec := t.lb, t.spec
	if lb.ProvisioningStatus == StatusError {
		return nil, m.recreate(ctx, lb, spec, "in provisioning status ERROR")
	}
	var fips []FloatingIP
	if !t.shared && mode == ensuring {
		if err := checkImmutable(lb, spec); err != nil {
			return nil, err
		}
		var err error
		if fips, err = m.ensureFloatingIP(ctx, id, svc, t.o, lb); err != nil {
			return nil, err
		}
	}
	remaining, err := m.applyNext(ctx, id, svc, t)
	if err != nil {
		return nil, err
	}
	if remaining > 0 {
		return nil, notReady(m.requeue(), ReasonApplyingChanges, "%s %s (%s): %d more changes queued", t.what(), lb.Name, lb.ID, remaining)
	}
	if err := waitForAddresses(nodes, m.requeue()); err != nil {
		return nil, err
	}
	if err := m.syncSecurityGroup(ctx, clusterName, svc, t.o, spec, nodes); err != nil {
		return nil, err
	}
	switch {
	case mode == updating:
		return nil, nil
	case !t.shared:
		return m.ingress(ctx, svc, t.o, lb, fips), nil
	}
	// A sharer publishes the load balancer's own address.
	if fips, err = m.Neutron.FloatingIPs(ctx, lb.VIPPortID, ""); err != nil {
		return nil, fmt.Errorf("floating IPs of VIP port %s: %w", lb.VIPPortID, err)
	}
	return status(lb, fips, serviceFamilies(svc)), nil
}

// prepare resolves everything a sync needs before its first change: the
// Service's options, the load balancer it uses (and whether it may), the
// provider's rules, the VIP's network and the member subnet, and the
// spec. It changes nothing in the cloud.
func (m *Manager) prepare(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node, mode syncMode) (Identity, *target, error) {
	o, err := parseOptions(svc, m.Config)
	if err != nil {
		return Identity{}, nil, err
	}
	id, err := m.identity(ctx, clusterName)
	if err != nil {
		return id, nil, err
	}
	r, err := m.routeOf(ctx, id, svc, forEnsure)
	if err != nil {
		return id, nil, err
	}
	if r.refused != nil {
		return id, nil, r.refused
	}
	t := &target{lb: r.own, shared: r.shared != nil}
	if t.shared {
		t.lb = r.shared
	}
	if t.lb == nil && mode == updating {
		return id, nil, fmt.Errorf("no load balancer %q to update", LoadBalancerName(clusterName, refOf(svc)))
	}
	if lb := t.lb; lb != nil {
		switch lb.ProvisioningStatus {
		case StatusActive:
		case StatusError:
			if t.shared {
				return id, nil, fmt.Errorf("shared load balancer %s (%s): %w", lb.Name, lb.ID, ErrProvisioningError)
			}
		default:
			return id, nil, m.waitFor(svc, id, lb, ReasonWaitingForOctavia, "%s %s (%s) is %s", t.what(), lb.Name, lb.ID, lb.ProvisioningStatus)
		}
	}
	if t.o, err = m.forProvider(svc, o, t.lb); err != nil {
		return id, nil, err
	}
	// A sharer's VIP and floating IP are the load balancer's: its own
	// settings of them do not apply.
	if !t.shared {
		if err := m.resolve(ctx, svc, t.o, t.lb, nodes); err != nil {
			return id, nil, err
		}
	}
	if err := m.resolveMemberSubnet(ctx, t.o); err != nil {
		return id, nil, err
	}
	t.spec = buildSpec(id, svc, t.o, nodes)
	return id, t, nil
}

// create makes the Service's load balancer in one call, and its floating
// IP: Neutron does not wait for Octavia, the VIP port exists already.
func (m *Manager) create(ctx context.Context, id Identity, svc *corev1.Service, t *target) error {
	spec := t.spec
	if m.createsStrand(spec.Provider) {
		klog.FromContext(ctx).Info("Creating the load balancer bare, its listeners then one call at a time: a fully populated create of this provider was stranded within the hour",
			"service", refOf(svc).String(), "provider", spec.Provider)
		spec.Listeners = nil // stranded.go
	}
	lb, err := m.Octavia.CreateLoadBalancer(ctx, createSpec(spec))
	if err != nil {
		return fmt.Errorf("create load balancer %q: %w", spec.Name, explainTLSRefusal(err, spec))
	}
	klog.FromContext(ctx).Info("Created load balancer", "service", refOf(svc).String(), "loadBalancer", spec.Name, "id", lb.ID, "listeners", len(spec.Listeners))
	if _, err := m.ensureFloatingIP(ctx, id, svc, t.o, lb); err != nil {
		return err
	}
	return m.waitFor(svc, id, lb, ReasonWaitingForOctavia, "load balancer %s (%s) is %s", spec.Name, lb.ID, lb.ProvisioningStatus)
}

// applyNext reads the tree, keeps the Service's tags on the load balancer
// (a sharer's membership; an owner's creator and consent tags), plans the
// Service's part of it and makes the first change. It returns how many
// changes remain after it.
func (m *Manager) applyNext(ctx context.Context, id Identity, svc *corev1.Service, t *target) (int, error) {
	lb, spec := t.lb, t.spec
	tree, err := m.Octavia.Tree(ctx, lb.ID)
	if err != nil {
		return 0, fmt.Errorf("read load balancer %s: %w", lb.ID, err)
	}
	// Only this Service's listeners: others may share the load balancer.
	// A port another Service holds is a conflict, refused before any change.
	own, err := ownPart(lb, tree, spec)
	if err != nil {
		return 0, err
	}
	if !t.shared {
		if strandedAtCreate(lb, own) {
			return 0, m.stranded(ctx, lb, spec)
		}
		m.unstrand(lb) // seen whole: any earlier sighting was a passing read
	}
	var changed bool
	if t.shared {
		changed, err = m.join(ctx, id, svc, lb, tree, spec)
	} else {
		changed, err = m.claim(ctx, lb, spec, t.o.sharedWith)
	}
	if err != nil || changed {
		return 1, err
	}
	steps, err := m.guardMonitors(lb.ID, spec.Provider, own, plan(lb.ID, own, spec))
	if err != nil {
		return 0, fmt.Errorf("%s %s (%s): %w", t.what(), lb.Name, lb.ID, err)
	}
	if len(steps) == 0 {
		return 0, nil
	}
	klog.FromContext(ctx).Info("Updating load balancer", "service", refOf(svc).String(), "loadBalancer", lb.Name, "id", lb.ID,
		"shared", t.shared, "step", steps[0].What, "queued", len(steps)-1)
	if err := m.runStep(ctx, lb, steps[0], spec); err != nil {
		return 0, err
	}
	if monitorGuarded(steps) {
		return 0, m.monitorsRemoved(ctx, lb, steps[0], len(steps)-1)
	}
	return len(steps) - 1 + steps[0].leaves, nil
}

// runStep makes one planned change. Octavia's 409 means the load balancer
// became busy since it was read (another change is settling): progress,
// not a failure, looked at again later and later (refusedBy, watch.go), for
// a 409 under a load balancer read ACTIVE can also be a child Octavia left
// PENDING_* for good.
func (m *Manager) runStep(ctx context.Context, lb *LoadBalancer, s step, spec Spec) error {
	if err := s.do(ctx, m.Octavia); err != nil {
		if openstack.IsBusy(err) {
			return m.refusedBy(lb, s.What)
		}
		return fmt.Errorf("load balancer %s: %s: %w", lb.Name, s.What, explainTLSRefusal(err, spec))
	}
	m.accepted(lb)
	return nil
}

// join adds the Service to the users of a load balancer it shares (its
// tag, checking max-shared-lb first), once. It reports whether it changed
// the load balancer.
func (m *Manager) join(ctx context.Context, id Identity, svc *corev1.Service, lb *LoadBalancer, tree *Tree, spec Spec) (bool, error) {
	users := owners(lb, id.ClusterUID, tree)
	if slices.Contains(users, spec.Owner) {
		return false, nil
	}
	if limit := m.Config.MaxSharedLB; limit > 0 && len(users) >= limit {
		return false, fmt.Errorf("%w %s (%s): it serves %d Services already (%s), max-shared-lb in [LoadBalancer] is %d",
			ErrSharing, lb.Name, lb.ID, len(users), strings.Join(users, ", "), limit)
	}
	tags := slices.Clone(lb.Tags)
	for _, u := range users {
		if !slices.Contains(tags, u) {
			tags = append(tags, u) // its creator's, implied until now
		}
	}
	if err := m.setTags(ctx, lb, append(tags, spec.Owner)); err != nil {
		return false, err
	}
	klog.FromContext(ctx).Info("Sharing load balancer", "service", refOf(svc).String(), "loadBalancer", lb.Name, "id", lb.ID, "services", len(users)+1)
	return true, nil
}
