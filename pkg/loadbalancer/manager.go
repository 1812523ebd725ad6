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

// DefaultRequeue is the longest a Service whose load balancer is busy
// (PENDING_*) waits before it is looked at again (watch.go rechecks sooner
// after a change), and how soon other in-progress steps come back.
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
	// SyncWait bounds how long a sync waits for a quick Octavia inside
	// the call (watch.go); zero means DefaultSyncWait, negative never.
	SyncWait time.Duration
	// StuckAfter is how long a load balancer may stay PENDING_* before it
	// counts as stuck (watch.go); zero means DefaultStuckAfter.
	StuckAfter time.Duration
	// StrandedAfter is how long a load balancer may stay ACTIVE over
	// listeners all PENDING_CREATE before it is replaced (stranded.go);
	// zero means DefaultStrandedAfter.
	StrandedAfter time.Duration
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
	// stale are this cluster's load balancers named for an older cluster
	// name, from one scan (rename.go).
	stale staleNames
	// busy records the Services waiting for Octavia and shares one view
	// of their load balancers (watch.go).
	busy busyWatch
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
	// When the upstream CCM would have used the same name, one list of
	// that name serves both lookups: ours carry the cluster's tag.
	tag, both := ClusterTag(id.ClusterUID), m.Config.AdoptUpstream && name == upstreamLoadBalancerName(id.ClusterName, refOf(svc))
	filter := tag
	if both {
		filter = ""
	}
	found, err := m.Octavia.FindLoadBalancers(ctx, name, filter)
	if err != nil {
		return nil, fmt.Errorf("find load balancer %q: %w", name, err)
	}
	var lbs []LoadBalancer
	for _, lb := range found {
		if lb.ProvisioningStatus != StatusPendingDelete && slices.Contains(lb.Tags, tag) {
			lbs = append(lbs, lb)
		}
	}
	if len(lbs) == 0 {
		if lb, err := m.underOldName(ctx, id, svc, use); lb != nil || err != nil {
			return lb, err // rename.go
		}
		if both {
			return m.upstreamAmong(ctx, id, svc, use, found) // adopt.go
		}
		return m.fromUpstream(ctx, id, svc, use)
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

// Delete removes the Service's load balancer with all its children, and
// the floating IP when this cluster allocated it and the Service does not
// ask to keep it. A floating IP the user brought is only detached.
func (m *Manager) Delete(ctx context.Context, clusterName string, svc *corev1.Service) error {
	if err := m.stillBusy(ctx, svc); err != nil {
		return err // waiting for Octavia, known without a call of its own (watch.go)
	}
	id, err := m.identity(ctx, clusterName)
	if err != nil {
		return err
	}
	r, err := m.routeOf(ctx, id, svc, forDelete)
	if err != nil {
		return err
	}
	lb := r.own
	if r.shared != nil && r.refused == nil {
		lb = r.shared
	}
	if err := m.remove(ctx, id, svc, r); err != nil {
		return m.watchBusy(svc, id, lb, err)
	}
	m.forget(svc)
	return nil
}

// remove is Delete once the Service's route is known.
func (m *Manager) remove(ctx context.Context, id Identity, svc *corev1.Service, r route) error {
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
			return m.refusedBy(lb, "delete it")
		}
		return fmt.Errorf("delete load balancer %s (%s): %w", lb.Name, lb.ID, err)
	}
	m.accepted(lb)
	m.unstrand(lb)
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
