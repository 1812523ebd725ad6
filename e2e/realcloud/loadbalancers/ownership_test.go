//go:build e2e

package loadbalancers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// TestOwnershipRefusalsAgainstRealNeutronAndOctavia runs the attacks of the
// ownership rules (docs/reference/load-balancers.md, "Ownership") through
// Services, on both clouds, so the refusals rest on what real Neutron and
// Octavia answer: another
// cluster's load balancer with our Service's very name, made as the upstream
// CCM makes it, is neither adopted, duplicated, changed nor deleted; a
// namespace user naming another namespace's load balancer is refused until
// its creator Service consents; and a port-id naming a node's port is
// refused with the port untouched.
func TestOwnershipRefusalsAgainstRealNeutronAndOctavia(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	for _, b := range framework.Backends(t) {
		b.FirstNode += 60 // apart from the other scenarios' nodes
		t.Run(b.Cloud.Name(), func(t *testing.T) { ownershipRefusals(t, cp, b) })
	}
}

func ownershipRefusals(t *testing.T, cp *framework.ControlPlane, b framework.Backend) {
	cloud := b.Cloud
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	api := framework.NewCloudAPI(ctx, t, cloud.CloudConf(t, ""))
	public := api.NetworkID(ctx, t, framework.FloatingNetwork)
	var nodes []string
	for i := range 2 {
		name := fmt.Sprintf("%s-own-%d", cloud.Name(), i)
		cp.JoinCloudNode(t, cloud, name, b.FirstNode+i)
		nodes = append(nodes, name)
	}
	conf := cloud.CloudConf(t, "\n[LoadBalancer]\nlb-provider = amphora\nfloating-network-id = "+public+"\n")
	cp.StartCCM(ctx, t, conf)
	for _, n := range nodes {
		cp.WaitInitialized(ctx, t, n)
	}
	lbName := func(ns, name string) string {
		return loadbalancer.LoadBalancerName("lab", loadbalancer.ServiceRef{Namespace: ns, Name: name})
	}

	t.Run("another cluster's load balancer of the same name, made as upstream makes it, is neither adopted, duplicated, changed nor deleted", func(t *testing.T) {
		ns := "own-up-" + cloud.Name()
		cp.CreateNamespace(ctx, t, ns)
		t.Cleanup(func() { cp.DeleteServices(t, ns) })
		ref := loadbalancer.ServiceRef{Namespace: ns, Name: "web"}
		name := lbName(ns, "web")
		// Their nodes are not ours: members at addresses no node of this
		// cluster has.
		var members []pools.CreateMemberOpts
		for i := range 2 {
			members = append(members, pools.CreateMemberOpts{Address: framework.NodeIP(b.FirstNode + 8 + i), ProtocolPort: 31080})
		}
		lb, err := loadbalancers.Create(ctx, api.Octavia, loadbalancers.CreateOpts{
			Name: name, Description: "Kubernetes external service " + ref.String() + " from cluster lab", Tags: []string{name},
			VipSubnetID: api.SubnetID(ctx, t, "lab-v4"),
			Listeners: []listeners.CreateOpts{{Name: "listener_0_" + name, Protocol: listeners.ProtocolTCP, ProtocolPort: 80, Tags: []string{name},
				DefaultPool: &pools.CreateOpts{Name: "pool_0_" + name, Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin, Members: members}}},
		}).Extract()
		if err != nil {
			t.Fatalf("create their load balancer as upstream does: %v", err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			_ = loadbalancers.Delete(ctx, api.Octavia, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
			// The real cloud outlives the test: the next one counts load balancers.
			_ = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				return len(api.LoadBalancersNamed(ctx, t, name)) == 0, nil
			})
		})
		api.WaitState(ctx, t, 5*time.Minute, "their load balancer ACTIVE", func(st *framework.OctaviaState) bool {
			return st.LBs[name].Status == "ACTIVE"
		})
		fip, err := floatingips.Create(ctx, api.Neutron, floatingips.CreateOpts{FloatingNetworkID: public, PortID: lb.VipPortID,
			Description: "Floating IP for Kubernetes external service " + ref.String() + " from cluster lab"}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = floatingips.Delete(context.Background(), api.Neutron, fip.ID).ExtractErr() })
		before := theirLoadBalancer(ctx, t, api, lb.ID, fip.ID)
		intact := func(t *testing.T, when string) {
			t.Helper()
			var ids []string
			for _, l := range api.LoadBalancersNamed(ctx, t, name) {
				ids = append(ids, l.ID)
			}
			if !slices.Equal(ids, []string{lb.ID}) {
				t.Errorf("%s: load balancers named %s: %v, want only theirs %s", when, name, ids, lb.ID)
			}
			if f, err := floatingips.Get(ctx, api.Neutron, fip.ID).Extract(); err != nil || f.PortID != lb.VipPortID {
				t.Errorf("%s: their floating IP %s (%v) is not on their VIP port %s", when, fip.FloatingIP, err, lb.VipPortID)
			}
			if after := theirLoadBalancer(ctx, t, api, lb.ID, fip.ID); after != before {
				t.Errorf("%s, their load balancer or floating IP changed:\nbefore %s\nafter  %s", when, before, after)
			}
		}

		if _, err := cp.Admin.CoreV1().Services(ns).Create(ctx, framework.LBService(ns, "web"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		msg := waitWarning(ctx, t, cp, ns, "web", "SyncLoadBalancerFailed")
		for _, want := range []string{"not adopting", lb.ID} {
			if !strings.Contains(msg, want) {
				t.Errorf("Warning %q does not say %q", msg, want)
			}
		}
		if s, err := cp.Admin.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil || len(s.Status.LoadBalancer.Ingress) > 0 {
			t.Errorf("the refused Service's ingress %v (%v), want none", s.Status.LoadBalancer.Ingress, err)
		}
		intact(t, "after our Service was refused")
		cp.DeleteServices(t, ns) // its finalizer gone, or an error
		intact(t, "after our Service was deleted")
	})

	t.Run("a Service of another namespace naming our load balancer is refused until its creator Service lists that namespace, then joins", func(t *testing.T) {
		nsA, nsB := "own-a-"+cloud.Name(), "own-b-"+cloud.Name()
		for _, ns := range []string{nsA, nsB} {
			cp.CreateNamespace(ctx, t, ns)
			t.Cleanup(func() { cp.DeleteServices(t, ns) }) // B's first: A's load balancer goes last
		}
		if _, err := cp.Admin.CoreV1().Services(nsA).Create(ctx, framework.LBService(nsA, "a"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		aSvc := cp.WaitIngress(ctx, t, nsA, "a", 5*time.Minute)
		st := api.WaitState(ctx, t, 5*time.Minute, "A's load balancer ACTIVE with both members", func(st *framework.OctaviaState) bool {
			return st.LBs[lbName(nsA, "a")].Status == "ACTIVE" && len(st.LBs[lbName(nsA, "a")].Listeners["TCP/80"].Members) == 2
		})
		aLB := st.LBs[lbName(nsA, "a")]
		before := treeOf(aLB)

		bSvc := framework.LBService(nsB, "b", corev1.ServicePort{Name: "alt", Protocol: corev1.ProtocolTCP, Port: 8080, TargetPort: intstr.FromInt32(8080)})
		bSvc.Annotations[loadbalancer.AnnotationLoadBalancerID] = aLB.ID
		if _, err := cp.Admin.CoreV1().Services(nsB).Create(ctx, bSvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		msg := waitWarning(ctx, t, cp, nsB, "b", "SyncLoadBalancerFailed")
		for _, want := range []string{loadbalancer.AnnotationLoadBalancerID, aLB.ID, loadbalancer.AnnotationSharedWithNamespaces} {
			if !strings.Contains(msg, want) {
				t.Errorf("Warning %q does not name %s", msg, want)
			}
		}
		st, err := api.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after := treeOf(st.LBs[lbName(nsA, "a")]); after != before {
			t.Errorf("A's load balancer changed by B's refused sync:\nbefore %s\nafter  %s", before, after)
		}
		if _, own := st.LBs[lbName(nsB, "b")]; own {
			t.Errorf("a load balancer %s was made for the refused Service", lbName(nsB, "b"))
		}

		updateService(ctx, t, cp, nsA, "a", func(s *corev1.Service) {
			s.Annotations[loadbalancer.AnnotationSharedWithNamespaces] = nsB
		})
		api.WaitState(ctx, t, 2*time.Minute, "A's load balancer tagged kube_shared_with="+nsB, func(st *framework.OctaviaState) bool {
			return slices.Contains(st.LBs[lbName(nsA, "a")].Tags, "kube_shared_with="+nsB)
		})
		// The service controller retries B with its backoff (up to 5 min).
		joined := cp.WaitIngress(ctx, t, nsB, "b", 6*time.Minute)
		if got, want := joined.Status.LoadBalancer.Ingress[0].IP, aSvc.Status.LoadBalancer.Ingress[0].IP; got != want {
			t.Errorf("B's ingress %s, want A's %s", got, want)
		}
		api.WaitState(ctx, t, 5*time.Minute, "B's TCP/8080 listener with both members on A's ACTIVE load balancer, no load balancer of B's own", func(st *framework.OctaviaState) bool {
			_, own := st.LBs[lbName(nsB, "b")]
			a := st.LBs[lbName(nsA, "a")]
			return !own && a.ID == aLB.ID && a.Status == "ACTIVE" && len(a.Listeners["TCP/8080"].Members) == 2
		})
	})

	t.Run("a port-id naming a node's port is refused with a Warning naming the annotation, nothing is created and the port stays as it was", func(t *testing.T) {
		ns := "own-port-" + cloud.Name()
		cp.CreateNamespace(ctx, t, ns)
		t.Cleanup(func() { cp.DeleteServices(t, ns) })
		port := api.NodePort(ctx, t, framework.NodeIP(b.FirstNode))
		before := portOf(ctx, t, api, port.ID)

		svc := framework.LBService(ns, "p")
		svc.Annotations[loadbalancer.AnnotationPortID] = port.ID
		if _, err := cp.Admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		msg := waitWarning(ctx, t, cp, ns, "p", "SyncLoadBalancerFailed")
		for _, want := range []string{loadbalancer.AnnotationPortID, port.ID} {
			if !strings.Contains(msg, want) {
				t.Errorf("Warning %q does not name %s", msg, want)
			}
		}
		t.Logf("%s: %s", cloud.Name(), msg)
		if lbs := api.LoadBalancersNamed(ctx, t, lbName(ns, "p")); len(lbs) != 0 {
			t.Errorf("load balancer %s (%s) was made for the refused Service", lbName(ns, "p"), lbs[0].ID)
		}
		cp.DeleteServices(t, ns)
		if after := portOf(ctx, t, api, port.ID); after != before {
			t.Errorf("the node's port changed:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// theirLoadBalancer is another cluster's load balancer and floating IP as
// the API returns them (update times included, so any write shows), with
// the listeners, pools and members under it.
func theirLoadBalancer(ctx context.Context, t *testing.T, api *framework.CloudAPI, lbID, fipID string) string {
	t.Helper()
	lb := loadbalancers.Get(ctx, api.Octavia, lbID)
	fip := floatingips.Get(ctx, api.Neutron, fipID)
	st, err := api.State(ctx)
	for _, err := range []error{lb.Err, fip.Err, err} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var tree string
	for _, l := range st.LBs {
		if l.ID == lbID {
			tree = treeOf(l)
		}
	}
	b, err := json.Marshal(map[string]any{"lb": lb.Body, "fip": fip.Body, "tree": tree})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// treeOf is a load balancer's tags, sorted, and its listeners with their
// pools, monitors and members.
func treeOf(lb framework.LBTree) string {
	tags := slices.Clone(lb.Tags)
	slices.Sort(tags)
	b, _ := json.Marshal(map[string]any{"id": lb.ID, "vipPort": lb.VIPPortID, "tags": tags, "listeners": lb.Listeners})
	return string(b)
}

// portOf is what a write to the port could change, and the floating IPs
// on it. Its status and revision are left out: OVN's binding moves them.
func portOf(ctx context.Context, t *testing.T, api *framework.CloudAPI, id string) string {
	t.Helper()
	p, err := ports.Get(ctx, api.Neutron, id).Extract()
	if err != nil {
		t.Fatal(err)
	}
	fips, err := api.FloatingIPs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var on []string
	for _, f := range fips {
		if f.PortID == id {
			on = append(on, f.FloatingIP)
		}
	}
	b, err := json.Marshal(map[string]any{
		"name": p.Name, "description": p.Description, "device": p.DeviceID, "owner": p.DeviceOwner, "admin": p.AdminStateUp,
		"mac": p.MACAddress, "fixed": p.FixedIPs, "pairs": p.AllowedAddressPairs, "groups": p.SecurityGroups, "tags": p.Tags,
		"floatingIPs": on,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
