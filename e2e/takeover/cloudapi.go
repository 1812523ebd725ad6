//go:build e2e

package takeover

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

// cloudAPI reads the cloud (either backend) through the OpenStack APIs, as an
// operator would with the openstack CLI: framework.CloudAPI, plus the
// takeover's snapshot of what it must keep.
type cloudAPI struct {
	*framework.CloudAPI
}

func newCloudAPI(ctx context.Context, t *testing.T, c framework.TestCloud) *cloudAPI {
	t.Helper()
	return &cloudAPI{framework.NewCloudAPI(ctx, t, c.CloudConf(t, ""))}
}

func (a *cloudAPI) loadBalancers(ctx context.Context) ([]loadbalancers.LoadBalancer, error) {
	pages, err := loadbalancers.List(a.Octavia, nil).AllPages(ctx)
	if err != nil {
		return nil, err
	}
	return loadbalancers.ExtractLoadBalancers(pages)
}

func (a *cloudAPI) listeners(ctx context.Context, lbID string) ([]listeners.Listener, error) {
	pages, err := listeners.List(a.Octavia, listeners.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
	if err != nil {
		return nil, err
	}
	return listeners.ExtractListeners(pages)
}

// snapshot is the cloud's load balancers, floating IPs and the
// per-Service security groups upstream names lb-sg-..., by ID, and each
// load balancer's children.
type snapshot struct {
	lbs      map[string]loadbalancers.LoadBalancer
	fips     map[string]floatingips.FloatingIP
	sgs      map[string]groups.SecGroup
	children map[string][]string // load balancer ID -> "listener|pool|monitor <id> ..."
}

func (a *cloudAPI) snapshot(ctx context.Context) (*snapshot, error) {
	lbs, err := a.loadBalancers(ctx)
	if err != nil {
		return nil, err
	}
	fips, err := a.FloatingIPs(ctx)
	if err != nil {
		return nil, err
	}
	pages, err := groups.List(a.Neutron, groups.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, err
	}
	sgs, err := groups.ExtractGroups(pages)
	if err != nil {
		return nil, err
	}
	s := &snapshot{lbs: map[string]loadbalancers.LoadBalancer{}, fips: map[string]floatingips.FloatingIP{},
		sgs: map[string]groups.SecGroup{}, children: map[string][]string{}}
	for _, lb := range lbs {
		s.lbs[lb.ID] = lb
		if s.children[lb.ID], err = a.children(ctx, lb.ID); err != nil {
			return nil, err
		}
	}
	for _, f := range fips {
		s.fips[f.ID] = f
	}
	for _, g := range sgs {
		if strings.HasPrefix(g.Name, "lb-sg-") {
			s.sgs[g.ID] = g
		}
	}
	return s, nil
}

// children are a load balancer's listeners (with the settings Stackward
// compares), pools and monitors (members are left out: a node change
// replaces them).
func (a *cloudAPI) children(ctx context.Context, lbID string) ([]string, error) {
	ls, err := a.listeners(ctx, lbID)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range ls {
		out = append(out, fmt.Sprintf("listener %s %s/%d allowed_cidrs %v connection_limit %d", l.ID, l.Protocol, l.ProtocolPort, l.AllowedCIDRs, l.ConnLimit))
		if l.DefaultPoolID == "" {
			continue
		}
		p, err := pools.Get(ctx, a.Octavia, l.DefaultPoolID).Extract()
		if err != nil {
			return nil, err
		}
		out = append(out, "pool "+p.ID)
		if p.MonitorID != "" {
			out = append(out, "monitor "+p.MonitorID)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (s *snapshot) String() string {
	var out []string
	for _, lb := range s.lbs {
		out = append(out, fmt.Sprintf("lb %s %s %s vip %s tags %v", lb.ID, lb.Name, lb.ProvisioningStatus, lb.VipAddress, lb.Tags))
	}
	for _, f := range s.fips {
		out = append(out, fmt.Sprintf("fip %s %s port %q %q", f.ID, f.FloatingIP, f.PortID, f.Description))
	}
	for _, g := range s.sgs {
		out = append(out, fmt.Sprintf("security group %s %s", g.ID, g.Name))
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// fipOf is the floating IP whose address is ip ("" when none).
func (s *snapshot) fipOf(ip string) string {
	for id, f := range s.fips {
		if f.FloatingIP == ip {
			return id
		}
	}
	return ""
}

// lbOfVIP is the load balancer whose VIP is ip or carries the floating IP
// ip ("" when none).
func (s *snapshot) lbOfVIP(ip string) string {
	for id, lb := range s.lbs {
		if lb.VipAddress == ip {
			return id
		}
		for _, f := range s.fips {
			if f.FloatingIP == ip && f.PortID == lb.VipPortID {
				return id
			}
		}
	}
	return ""
}

func ingressIP(svc *corev1.Service) string {
	if len(svc.Status.LoadBalancer.Ingress) == 0 {
		return ""
	}
	return svc.Status.LoadBalancer.Ingress[0].IP
}

// waitService waits until the Service satisfies cond and returns it.
func waitService(ctx context.Context, t *testing.T, cp *framework.ControlPlane, ns, name string, timeout time.Duration, what string, cond func(*corev1.Service) bool) *corev1.Service {
	t.Helper()
	var svc *corev1.Service
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		s, err := cp.Admin.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		svc = s
		return cond(s), nil
	})
	if err != nil {
		t.Fatalf("service %s/%s: %s: %v; events: %s", ns, name, what, err, events(ctx, cp, ns, name))
	}
	return svc
}

func events(ctx context.Context, cp *framework.ControlPlane, ns, name string) string {
	list, err := cp.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, fmt.Sprintf("%s %s (x%d): %s", e.Type, e.Reason, e.Count, e.Message))
	}
	return strings.Join(out, "; ")
}

// waitCloud polls the cloud until cond holds for its snapshot.
func waitCloud(ctx context.Context, t *testing.T, api *cloudAPI, timeout time.Duration, what string, cond func(*snapshot) bool) *snapshot {
	t.Helper()
	var last *snapshot
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		s, err := api.snapshot(ctx)
		if err != nil {
			lastErr = err
			return false, nil
		}
		last = s
		return cond(s), nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last error %v); cloud:\n%v", what, err, lastErr, last)
	}
	return last
}

func countFIP(id string) int {
	if id == "" {
		return 0
	}
	return 1
}

func sameKeys[V any](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// hasEventSince says whether the Service has an event of reason recorded
// at or after since.
func hasEventSince(ctx context.Context, cp *framework.ControlPlane, ns, name, reason string, since metav1.Time) bool {
	list, err := cp.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return false
	}
	return slices.ContainsFunc(list.Items, func(e corev1.Event) bool { return e.Reason == reason && !e.LastTimestamp.Before(&since) })
}

// warningsSince are the Service's Warning events recorded at or after since.
func warningsSince(ctx context.Context, cp *framework.ControlPlane, ns, name string, since metav1.Time) []string {
	list, err := cp.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return []string{"list events: " + err.Error()}
	}
	var out []string
	for _, e := range list.Items {
		if e.Type == corev1.EventTypeWarning && !e.LastTimestamp.Before(&since) {
			out = append(out, fmt.Sprintf("Warning %s (x%d): %s", e.Reason, e.Count, e.Message))
		}
	}
	return out
}

// dropServices deletes the test's Services and strips their finalizers,
// so none outlives the test on the shared control plane.
func dropServices(t *testing.T, cp *framework.ControlPlane, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cp.Admin.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("list services: %v", err)
		return
	}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	for _, s := range list.Items {
		_ = cp.Admin.CoreV1().Services(ns).Delete(ctx, s.Name, metav1.DeleteOptions{})
		_, _ = cp.Admin.CoreV1().Services(ns).Patch(ctx, s.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
}

// dropService deletes Service name as its user would and waits until it is
// gone (the upstream CCM has deleted its load balancer and released its
// finalizer).
func dropService(ctx context.Context, t *testing.T, cp *framework.ControlPlane, ns, name string) {
	t.Helper()
	if err := cp.Admin.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Admin.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("Service %s/%s not deleted by the upstream CCM: %v; events: %s", ns, name, err, events(ctx, cp, ns, name))
	}
}
