package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/openstack"

	"github.com/stackward/stackward/pkg/config"
)

// DefaultRequeue is how soon a Service whose load balancer is busy
// (PENDING_*) or has more changes queued is looked at again.
const DefaultRequeue = 5 * time.Second

// Manager orchestrates the Octavia load balancers of Services. It never
// waits for Octavia: a busy load balancer is a RetryError that brings the
// Service back after Requeue, so one slow or stuck load balancer holds no
// worker and blocks no other Service.
type Manager struct {
	Octavia Octavia
	Neutron Neutron
	Config  config.LoadBalancer
	// ClusterUID returns the cluster's UID (the kube-system namespace UID);
	// it may fail until the apiserver answers.
	ClusterUID func(ctx context.Context) (string, error)
	// Requeue is the RetryError delay; zero means DefaultRequeue.
	Requeue time.Duration
	// SecurityGroups, with Config.ManageSecurityGroups, manages a security
	// group per Service on the member ports (secgroups.go).
	SecurityGroups SecurityGroups
	// Annotate merges annotations into the Service in the apiserver (the
	// load-balancer-address, hostname.go); nil writes none.
	Annotate func(ctx context.Context, svc *corev1.Service, annotations map[string]string) error
	// ProjectID is the project of the credentials: a port-id of another
	// project is refused (portid.go). "" leaves that to Neutron's policy.
	ProjectID string

	mu sync.Mutex
	// Looked up once: the only external network, the nodes' subnet, the
	// CIDRs of member subnets.
	floatingNetwork, nodeSubnet string
	subnetCIDRs                 map[string]string
	// tagLocks serialize each load balancer's tag changes (shared.go).
	tagLocks map[string]*sync.Mutex
	// failedCreates are the OVN provider's listener creates that failed
	// after monitors were removed for them (ovnmonitors.go).
	failedCreates failedCreates
}

func (m *Manager) requeue() time.Duration {
	if m.Requeue > 0 {
		return m.Requeue
	}
	return DefaultRequeue
}

func (m *Manager) identity(ctx context.Context, clusterName string) (Identity, error) {
	uid, err := m.ClusterUID(ctx)
	if err != nil {
		return Identity{}, fmt.Errorf("cluster UID: %w", err)
	}
	return Identity{ClusterName: clusterName, ClusterUID: uid}, nil
}

func refOf(svc *corev1.Service) ServiceRef {
	return ServiceRef{Namespace: svc.Namespace, Name: svc.Name}
}

// find returns the Service's load balancer, or nil when there is none.
// One being deleted (PENDING_DELETE) is gone already. Several (a create
// retried after a lost answer, two leaders racing in a failover, or a
// replacement of one in ERROR) are all ours by name and tag: a working one
// is kept over one in ERROR, else the oldest, and the others are deleted.
// One in ERROR hands its floating IPs to the kept one when that has none
// (an interrupted replacement, recreate.go); any other duplicate releases
// them.
func (m *Manager) find(ctx context.Context, id Identity, svc *corev1.Service, use lookup) (*LoadBalancer, error) {
	name := LoadBalancerName(id.ClusterName, refOf(svc))
	found, err := m.Octavia.FindLoadBalancers(ctx, name, ClusterTag(id.ClusterUID))
	if err != nil {
		return nil, fmt.Errorf("find load balancer %q: %w", name, err)
	}
	var lbs []LoadBalancer
	for _, lb := range found {
		if lb.ProvisioningStatus != StatusPendingDelete {
			lbs = append(lbs, lb)
		}
	}
	if len(lbs) == 0 {
		return m.fromUpstream(ctx, id, svc, use) // adopt.go
	}
	slices.SortFunc(lbs, func(a, b LoadBalancer) int {
		if ae, be := a.ProvisioningStatus == StatusError, b.ProvisioningStatus == StatusError; ae != be {
			if ae {
				return 1
			}
			return -1
		}
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	keeper := &lbs[0]
	for _, dup := range lbs[1:] {
		klog.FromContext(ctx).Info("Deleting a duplicate load balancer", "service", refOf(svc).String(), "loadBalancer", name, "kept", keeper.ID, "duplicate", dup.ID, "status", dup.ProvisioningStatus)
		if dup.ProvisioningStatus == StatusError {
			err = m.retireDuplicate(ctx, id, refOf(svc), &dup, keeper, keepFloatingIP(svc))
		} else {
			err = m.deleteLB(ctx, id, &dup, keepFloatingIP(svc))
		}
		if err != nil {
			return nil, fmt.Errorf("%w %q: deleting %s: %w", ErrDuplicate, name, dup.ID, err)
		}
	}
	return keeper, nil
}

// Get reports the Service's load balancer and its status.
func (m *Manager) Get(ctx context.Context, clusterName string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	id, err := m.identity(ctx, clusterName)
	if err != nil {
		return nil, false, err
	}
	r, err := m.routeOf(ctx, id, svc, forGet)
	if err != nil {
		return nil, false, err
	}
	if r.shared != nil {
		return m.getShared(ctx, id, svc, r)
	}
	lb := r.own
	if lb == nil || lb.ProvisioningStatus == StatusPendingDelete {
		left, err := m.leftovers(ctx, svc)
		return nil, left, err
	}
	fips, err := m.Neutron.FloatingIPs(ctx, lb.VIPPortID, "")
	if err != nil {
		return nil, true, fmt.Errorf("floating IPs of VIP port %s: %w", lb.VIPPortID, err)
	}
	st := status(lb, fips, serviceFamilies(svc))
	if o, err := parseOptions(svc, m.Config); err == nil {
		st = publish(st, o, m.Config.EnableIngressHostname, m.Config.IngressHostnameSuffix)
	}
	return st, true, nil
}

// leftovers reports whether the Service still has a cloud resource of its
// own once its load balancer is gone or going: its security group, whose
// delete can fail after the load balancer's (Neutron answers 409
// SecurityGroupInUse while a port still holds it; seen on real Neutron).
// k8s.io/cloud-provider removes the Service's finalizer without calling
// EnsureLoadBalancerDeleted when GetLoadBalancer says nothing exists, so
// without this the group would be left behind for good. Another cluster's
// group is not this Service's (ownGroup refuses it).
func (m *Manager) leftovers(ctx context.Context, svc *corev1.Service) (bool, error) {
	if m.SecurityGroups == nil || !m.Config.ManageSecurityGroups {
		return false, nil
	}
	name := SecurityGroupName(svc)
	group, err := m.findGroup(ctx, name)
	if err != nil || group == nil {
		return false, err
	}
	uid, err := m.ClusterUID(ctx)
	if err != nil {
		return false, fmt.Errorf("security group %q: %w", name, err)
	}
	foreign := !slices.Contains(group.Tags, ClusterTag(uid)) &&
		slices.ContainsFunc(group.Tags, func(t string) bool { return strings.HasPrefix(t, clusterUIDTagPrefix) })
	return !foreign, nil
}

// Ensure creates or updates the Service's load balancer. Each call makes
// at most one change in Octavia (plus the floating IP in Neutron) and
// returns a RetryError while more remain or Octavia is busy.
func (m *Manager) Ensure(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	o, err := parseOptions(svc, m.Config)
	if err != nil {
		return nil, err
	}
	id, err := m.identity(ctx, clusterName)
	if err != nil {
		return nil, err
	}
	r, err := m.routeOf(ctx, id, svc, forEnsure)
	if err != nil {
		return nil, err
	}
	if r.refused != nil {
		return nil, r.refused
	}
	if r.shared != nil {
		return m.ensureShared(ctx, id, svc, o, r.shared, nodes)
	}
	lb := r.own
	if o, err = m.forProvider(svc, o, lb); err != nil {
		return nil, err
	}
	if err := m.resolve(ctx, o, lb, nodes); err != nil {
		return nil, err
	}
	if err := m.resolveMemberSubnet(ctx, o); err != nil {
		return nil, err
	}
	spec := buildSpec(id, svc, o, nodes)
	logger := klog.FromContext(ctx).WithValues("service", refOf(svc).String(), "loadBalancer", spec.Name)

	if lb == nil {
		lb, err = m.Octavia.CreateLoadBalancer(ctx, createSpec(spec))
		if err != nil {
			return nil, fmt.Errorf("create load balancer %q: %w", spec.Name, explainTLSRefusal(err, spec))
		}
		logger.Info("Created load balancer", "id", lb.ID, "listeners", len(spec.Listeners))
		// Neutron does not wait for Octavia: the VIP port exists already.
		if _, err := m.ensureFloatingIP(ctx, id, svc, o, lb); err != nil {
			return nil, err
		}
		return nil, notReady(m.requeue(), ReasonWaitingForOctavia, "load balancer %s (%s) is %s", spec.Name, lb.ID, lb.ProvisioningStatus)
	}
	switch lb.ProvisioningStatus {
	case StatusActive:
	case StatusError:
		return nil, m.recreate(ctx, lb, spec)
	default:
		return nil, notReady(m.requeue(), ReasonWaitingForOctavia, "load balancer %s (%s) is %s", spec.Name, lb.ID, lb.ProvisioningStatus)
	}
	if err := checkImmutable(lb, spec); err != nil {
		return nil, err
	}
	fips, err := m.ensureFloatingIP(ctx, id, svc, o, lb)
	if err != nil {
		return nil, err
	}
	remaining, err := m.step(ctx, lb, spec, o.sharedWith)
	if err != nil {
		return nil, err
	}
	if remaining > 0 {
		return nil, notReady(m.requeue(), ReasonApplyingChanges, "load balancer %s (%s): %d more changes queued", spec.Name, lb.ID, remaining)
	}
	if err := waitForAddresses(nodes, m.requeue()); err != nil {
		return nil, err
	}
	if err := m.syncSecurityGroup(ctx, clusterName, svc, o, spec, nodes); err != nil {
		return nil, err
	}
	return m.ingress(ctx, svc, o, lb, fips), nil
}

// Update brings the members up to date with nodes. It is Ensure's tree
// sync without the floating IP (which node changes never touch).
func (m *Manager) Update(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) error {
	o, err := parseOptions(svc, m.Config)
	if err != nil {
		return err
	}
	id, err := m.identity(ctx, clusterName)
	if err != nil {
		return err
	}
	r, err := m.routeOf(ctx, id, svc, forEnsure)
	if err != nil {
		return err
	}
	if r.refused != nil {
		return r.refused
	}
	if r.shared != nil {
		_, err = m.ensureShared(ctx, id, svc, o, r.shared, nodes)
		return err
	}
	lb := r.own
	if lb == nil {
		return fmt.Errorf("no load balancer %q to update", LoadBalancerName(clusterName, refOf(svc)))
	}
	if lb.ProvisioningStatus != StatusActive && lb.ProvisioningStatus != StatusError {
		return notReady(m.requeue(), ReasonWaitingForOctavia, "load balancer %s is %s", lb.Name, lb.ProvisioningStatus)
	}
	if o, err = m.forProvider(svc, o, lb); err != nil {
		return err
	}
	if err := m.resolve(ctx, o, lb, nodes); err != nil {
		return err
	}
	if err := m.resolveMemberSubnet(ctx, o); err != nil {
		return err
	}
	spec := buildSpec(id, svc, o, nodes)
	if lb.ProvisioningStatus == StatusError {
		return m.recreate(ctx, lb, spec)
	}
	remaining, err := m.step(ctx, lb, spec, o.sharedWith)
	if err != nil {
		return err
	}
	if remaining > 0 {
		return notReady(m.requeue(), ReasonApplyingChanges, "load balancer %s: %d more changes queued", lb.Name, remaining)
	}
	if err := waitForAddresses(nodes, m.requeue()); err != nil {
		return err
	}
	return m.syncSecurityGroup(ctx, clusterName, svc, o, spec, nodes)
}

// waitForAddresses asks for another sync while a node the cloud-node
// controller has initialized (it has a providerID) still lacks its
// InternalIP: the addresses are patched just after the providerID, and the
// service controller does not sync again when they arrive.
func waitForAddresses(nodes []*corev1.Node, d time.Duration) error {
	for _, n := range nodes {
		if n.Spec.ProviderID != "" && internalIP(n, false) == "" && internalIP(n, true) == "" {
			return notReady(d, ReasonWaitingForNodeAddresses, "node %s has no InternalIP yet; it becomes a member when it has", n.Name)
		}
	}
	return nil
}

// step reads the tree, plans, runs the first step and returns how many
// steps remain after it.
func (m *Manager) step(ctx context.Context, lb *LoadBalancer, spec Spec, consent []string) (int, error) {
	if changed, err := m.claim(ctx, lb, spec, consent); err != nil || changed {
		return 1, err
	}
	tree, err := m.Octavia.Tree(ctx, lb.ID)
	if err != nil {
		return 0, fmt.Errorf("read load balancer %s: %w", lb.ID, err)
	}
	// Only this Service's listeners: others may share the load balancer.
	if tree, err = ownPart(lb, tree, spec); err != nil {
		return 0, err
	}
	steps, err := m.guardMonitors(lb.ID, spec.Provider, tree, plan(lb.ID, tree, spec))
	if err != nil {
		return 0, fmt.Errorf("load balancer %s (%s): %w", lb.Name, lb.ID, err)
	}
	if len(steps) == 0 {
		return 0, nil
	}
	klog.FromContext(ctx).Info("Updating load balancer", "loadBalancer", lb.Name, "id", lb.ID, "step", steps[0].What, "queued", len(steps)-1)
	if err := steps[0].do(ctx, m.Octavia); err != nil {
		if openstack.IsBusy(err) {
			// Busy since we read it (another change is settling).
			return 0, notReady(m.requeue(), ReasonWaitingForOctavia, "load balancer %s: %s: Octavia says it is busy", lb.Name, steps[0].What)
		}
		return 0, fmt.Errorf("load balancer %s: %s: %w", lb.Name, steps[0].What, explainTLSRefusal(err, spec))
	}
	if monitorGuarded(steps) {
		return 0, m.monitorsRemoved(ctx, lb, steps[0], len(steps)-1)
	}
	return len(steps) - 1, nil
}

// Delete removes the Service's load balancer with all its children, and
// the floating IP when this cluster allocated it and the Service does not
// ask to keep it. A floating IP the user brought is only detached.
func (m *Manager) Delete(ctx context.Context, clusterName string, svc *corev1.Service) error {
	id, err := m.identity(ctx, clusterName)
	if err != nil {
		return err
	}
	r, err := m.routeOf(ctx, id, svc, forDelete)
	if err != nil {
		return err
	}
	if r.shared != nil && r.refused == nil {
		return m.deleteShared(ctx, id, svc, r.shared)
	}
	// A load balancer the Service may not use was never its own: only
	// what the Service itself owns goes.
	lb := r.own
	if lb != nil && lb.ProvisioningStatus != StatusPendingDelete {
		// Other Services still on it keep it; this one only leaves.
		if whole, err := m.leaveShared(ctx, id, svc, lb); err != nil || !whole {
			if err != nil {
				return err
			}
			return m.deleteSecurityGroup(ctx, svc)
		}
		if err := m.deleteLB(ctx, id, lb, keepFloatingIP(svc)); err != nil {
			return err
		}
		klog.FromContext(ctx).Info("Deleted load balancer", "service", refOf(svc).String(), "loadBalancer", lb.Name, "id", lb.ID)
	}
	// Also when the load balancer is gone already: a previous sync may
	// have deleted it and failed on the group.
	return m.deleteSecurityGroup(ctx, svc)
}

// keepFloatingIP says which floating IPs of the Service's load balancers
// are only detached, never released: all of them with keep-floatingip
// (an unreadable value keeps them: releasing an address is the one thing
// that cannot be undone), and the one spec.loadBalancerIP names, which a
// retried create may have put on a duplicate.
func keepFloatingIP(svc *corev1.Service) func(FloatingIP) bool {
	keep := keepAnnotated(svc)
	named := svc.Spec.LoadBalancerIP
	return func(f FloatingIP) bool { return keep || (named != "" && f.Address == named) }
}

func keepAnnotated(svc *corev1.Service) bool {
	keep, err := strconv.ParseBool(svc.Annotations[AnnotationKeepFloatingIP])
	if _, set := svc.Annotations[AnnotationKeepFloatingIP]; set && err != nil {
		keep = true
	}
	return keep
}

// asksToKeep says whether the Service asks to keep an address of its load
// balancer: keep-floatingip, or spec.loadBalancerIP.
func asksToKeep(svc *corev1.Service) bool {
	return keepAnnotated(svc) || svc.Spec.LoadBalancerIP != ""
}

// deleteLB releases the floating IPs on the VIP port (deleting those this
// cluster allocated unless keep says otherwise, detaching the others), then
// deletes the load balancer with its children.
func (m *Manager) deleteLB(ctx context.Context, id Identity, lb *LoadBalancer, keep func(FloatingIP) bool) error {
	if lb.ProvisioningStatus != StatusActive && lb.ProvisioningStatus != StatusError {
		return notReady(m.requeue(), ReasonWaitingForOctavia, "load balancer %s (%s) is %s; deleting it when it settles", lb.Name, lb.ID, lb.ProvisioningStatus)
	}
	// Floating IPs first: once the VIP port is gone nothing links them to
	// the load balancer any more.
	fips, err := m.Neutron.FloatingIPs(ctx, lb.VIPPortID, "")
	if err != nil {
		return fmt.Errorf("floating IPs of VIP port %s: %w", lb.VIPPortID, err)
	}
	kept := slices.Contains(lb.Tags, keptTag) // its creator asked, and left first
	for _, f := range fips {
		if releasable(f, lb, id.ClusterUID) && !keep(f) && !kept {
			err = m.Neutron.DeleteFloatingIP(ctx, f.ID)
		} else {
			err = m.Neutron.AttachFloatingIP(ctx, f.ID, "")
		}
		if err != nil {
			return fmt.Errorf("release floating IP %s: %w", f.Address, err)
		}
	}
	if err := m.Octavia.DeleteLoadBalancer(ctx, lb.ID); err != nil {
		if openstack.IsBusy(err) {
			return notReady(m.requeue(), ReasonWaitingForOctavia, "load balancer %s (%s) became busy; deleting it when it settles", lb.Name, lb.ID)
		}
		return fmt.Errorf("delete load balancer %s (%s): %w", lb.Name, lb.ID, err)
	}
	return nil
}

// checkImmutable refuses changes Octavia cannot make in place, rather than
// silently ignoring them.
func checkImmutable(lb *LoadBalancer, spec Spec) error {
	var errs []error
	for _, f := range []struct{ what, have, want string }{
		{"VIP subnet (" + AnnotationSubnetID + ")", lb.VIPSubnetID, spec.VIPSubnetID},
		{"VIP network (" + AnnotationNetworkID + ")", lb.VIPNetworkID, spec.VIPNetworkID},
		{"flavor (" + AnnotationFlavorID + ")", lb.FlavorID, spec.FlavorID},
		{"availability zone (" + AnnotationAvailabilityZone + ")", lb.AvailabilityZone, spec.Zone},
		{"VIP address (spec.loadBalancerIP)", lb.VIPAddress, spec.VIPAddress},
		{"VIP port (" + AnnotationPortID + ")", lb.VIPPortID, spec.VIPPortID},
	} {
		if f.want != "" && f.have != f.want {
			errs = append(errs, fmt.Errorf("load balancer %s: %s %q -> %q %w", lb.Name, f.what, f.have, f.want, ErrImmutable))
		}
	}
	return errors.Join(errs...)
}

// status is the Service's ingress: the floating IP, or the VIP without one;
// of each family for a dual-stack Service (families, dualstack.go).
func status(lb *LoadBalancer, fips []FloatingIP, families []corev1.IPFamily) *corev1.LoadBalancerStatus {
	ips := []string{}
	for _, f := range fips {
		ips = append(ips, f.Address)
	}
	slices.Sort(ips)
	if dual := dualStackStatus(lb, fips, families, ips); len(dual) > 0 {
		ips = dual
	}
	if len(ips) == 0 {
		ips = append(ips, lb.VIPAddress)
	}
	st := &corev1.LoadBalancerStatus{}
	for _, ip := range ips {
		st.Ingress = append(st.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	return st
}
