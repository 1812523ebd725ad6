//go:build e2e

// Package takeover switches a cluster from the real upstream
// openstack-cloud-controller-manager (built by e2e/upstreamccm) to
// stackward-ccm as docs/install/upstream-ccm.md ("Switching from the
// upstream OpenStack CCM") says: upstream initializes the nodes and makes the load balancers,
// floating IPs, security groups and routes; Stackward must keep every
// address, create nothing new and leave behind on delete exactly what
// upstream would have. Run is the scenario on any framework.TestCloud: this
// package runs it on stackward-cloudsim, e2e/realcloud/loadbalancers on real
// OpenStack.
package takeover

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

const (
	clusterName = "lab" // framework.CCMArgs' --cluster-name: the switch keeps it
	clusterCIDR = "198.19.128.0/17"
	lbIDKey     = "loadbalancer.openstack.org/load-balancer-id"
	adoptedTag  = "stackward_adopted_from=openstack-ccm"
)

// serviceKind is one kind of Service the upstream CCM made a load balancer
// for, and what must become of it.
type serviceKind struct {
	name, sentence string
	edit           func(svc *corev1.Service, c *caseState)
	// shares names the Service whose load balancer this one shares.
	shares string
	// internal Services have no floating IP; their address is the VIP.
	internal bool
	// fipKept: deleting the Service leaves its floating IP (detached), as
	// upstream would have.
	fipKept bool
	// lbKeptOnDelete: the load balancer outlives the Service (another
	// Service still uses it), as with upstream.
	lbKeptOnDelete bool
}

// caseState is what the test recorded for one Service.
type caseState struct {
	ip, lbID, fipID string
	pinnedFIP       string // the operator's floating IP spec.loadBalancerIP names
	row             row
}

// row is one line of the closing table.
type row struct {
	ipKept                                  bool
	lbsBefore, lbsAfterSwitch, lbsAfterDel  int
	fipsBefore, fipsAfterSwitch, fipsAfterD int
}

func tcp(port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: fmt.Sprintf("tcp-%d", port), Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(8080)}
}

var kinds = []serviceKind{
	{name: "plain", sentence: "a plain Service", fipKept: false},
	{name: "keep", sentence: "a Service with keep-floatingip", fipKept: true, edit: func(s *corev1.Service, _ *caseState) {
		s.Annotations["loadbalancer.openstack.org/keep-floatingip"] = "true"
	}},
	{name: "pinned", sentence: "a Service whose spec.loadBalancerIP names the operator's floating IP", fipKept: true, edit: func(s *corev1.Service, c *caseState) {
		s.Spec.LoadBalancerIP = c.pinnedFIP //nolint:staticcheck // the field upstream users have
	}},
	{name: "internal", sentence: "an internal Service", internal: true, edit: func(s *corev1.Service, _ *caseState) {
		s.Annotations["service.beta.kubernetes.io/openstack-internal-load-balancer"] = "true"
	}},
	{name: "shared-a", sentence: "the first of two Services sharing a load balancer", lbKeptOnDelete: true},
	{name: "shared-b", sentence: "the second of two Services sharing a load balancer", shares: "shared-a", edit: func(s *corev1.Service, _ *caseState) {
		s.Spec.Ports = []corev1.ServicePort{tcp(81)}
	}},
	{name: "udp", sentence: "a UDP Service", edit: func(s *corev1.Service, _ *caseState) {
		s.Spec.Ports = []corev1.ServicePort{{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(53)}}
	}},
	{name: "bare", sentence: "a Service whose load-balancer-id annotation was removed before the switch"},
}

// Run is the scenario on cloud, with nodes from framework.NodeIP(firstNode+1)
// on and a namespace named after the cloud: the upstream CCM v1.36.0,
// with rbac, initializes the nodes and makes the load balancers, floating IPs,
// security groups and routes of every kind of Service; then the cluster
// switches to Stackward as docs/install/upstream-ccm.md says (upstream stopped,
// Stackward started with the same cloud.conf and cluster name). Every
// external IP stays, nothing new is made in the cloud, upstream's
// listeners, pools and monitors stay as they are, a change lands on the
// adopted load balancer, routes stay and follow node removal, and deleting
// each Service leaves exactly what upstream would have left. It logs the
// table of what each kind of Service had before and after.
func Run(t *testing.T, cp *framework.ControlPlane, cloud framework.TestCloud, rbac framework.UpstreamRBAC, firstNode int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	ns := "legacy-" + cloud.Name()
	api := newCloudAPI(ctx, t, cloud)
	routerID := api.RouterID(ctx, t, "lab-router")
	// Upstream's security groups and health monitors are on, as in most
	// production clusters: Stackward must keep both.
	conf := cloud.CloudConf(t, fmt.Sprintf("[LoadBalancer]\nmanage-security-groups = true\ncreate-monitor = true\n\n[Route]\nrouter-id = %s\n", routerID))
	routeArgs := []string{"--allocate-node-cidrs", "--configure-cloud-routes", "--cluster-cidr=" + clusterCIDR, "--route-reconciliation-period=2s"}

	upstream := cp.StartUpstreamCCM(ctx, t, rbac, conf, append([]string{"--cluster-name=" + clusterName, "--leader-elect=false",
		"--secure-port=0", "--use-service-account-credentials=false", "--node-monitor-period=2s", "--v=2"}, routeArgs...)...)

	nodes := map[string]*framework.Node{}
	nodeIPs := map[string]string{}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("%s-up-%d", cloud.Name(), i)
		cloud.CreateServer(t, name, firstNode+i, "m1.small", "az-1")
		t.Cleanup(func() { _ = cp.Admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		nodes[name] = cp.StartNode(t, framework.NodeOptions{Name: name, IP: framework.NodeIP(firstNode + i)})
		nodeIPs[name] = framework.NodeIP(firstNode + i)
	}
	before := map[string]*corev1.Node{}
	for name := range nodes {
		n, err := cp.WaitForNode(ctx, name, 3*time.Minute, func(n *corev1.Node) bool {
			return n.Spec.ProviderID != "" && !framework.HasTaint(n, "node.cloudprovider.kubernetes.io/uninitialized") && n.Spec.PodCIDR != ""
		})
		if err != nil {
			t.Fatalf("the upstream CCM did not initialize node %s: %v\n%s", name, err, upstream.Tail(6000))
		}
		before[name] = n
	}

	if _, err := cp.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropServices(t, cp, ns) })

	// The operator reserved the address spec.loadBalancerIP names: with a
	// project member's credentials (the lab's, as in most clusters) neither
	// CCM may allocate a chosen address (Neutron's create_floatingip:
	// floating_ip_address is admin_only).
	reserved, err := floatingips.Create(ctx, api.Neutron, floatingips.CreateOpts{FloatingNetworkID: api.NetworkID(ctx, t, framework.FloatingNetwork),
		Description: "reserved by the operator for " + ns + "/pinned"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]*caseState{}
	for _, k := range kinds {
		c := &caseState{pinnedFIP: reserved.FloatingIP}
		state[k.name] = c
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: k.name, Annotations: map[string]string{}},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": k.name}, Ports: []corev1.ServicePort{tcp(80)}},
		}
		if k.edit != nil {
			k.edit(svc, c)
		}
		if k.shares != "" {
			svc.Annotations[lbIDKey] = state[k.shares].lbID
		}
		if _, err := cp.Admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := waitService(ctx, t, cp, ns, k.name, 3*time.Minute, "the upstream CCM gives it an address and writes "+lbIDKey, func(s *corev1.Service) bool {
			return ingressIP(s) != "" && s.Annotations[lbIDKey] != ""
		})
		c.ip, c.lbID = ingressIP(got), got.Annotations[lbIDKey]
	}

	routesOf := func() ([]string, error) {
		rs, err := api.RoutesOf(ctx, routerID)
		var out []string
		for _, r := range rs {
			out = append(out, r.DestinationCIDR+" via "+r.NextHop)
		}
		slices.Sort(out)
		return out, err
	}
	var wantRoutes []string
	for name, n := range before {
		wantRoutes = append(wantRoutes, n.Spec.PodCIDR+" via "+nodeIPs[name])
	}
	slices.Sort(wantRoutes)
	waitRoutes := func(what string, want []string) {
		t.Helper()
		var got []string
		if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err = routesOf()
			return err == nil && slices.Equal(got, want), nil
		}); err != nil {
			t.Fatalf("%s: routes %v (%v), want %v", what, got, err, want)
		}
	}
	waitRoutes("the upstream CCM routes every node's pod CIDR", wantRoutes)

	upSnap, err := api.snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		c := state[k.name]
		c.fipID = upSnap.fipOf(c.ip)
		if _, ok := upSnap.lbs[c.lbID]; !ok || upSnap.lbOfVIP(c.ip) != c.lbID {
			t.Fatalf("%s: address %s and %s %s do not match the cloud:\n%v", k.sentence, c.ip, lbIDKey, c.lbID, upSnap)
		}
		if k.internal == (c.fipID != "") {
			t.Fatalf("%s: address %s, floating IP %q:\n%v", k.sentence, c.ip, c.fipID, upSnap)
		}
		c.row.lbsBefore, c.row.fipsBefore = 1, countFIP(c.fipID)
	}
	if len(upSnap.sgs) != len(kinds) {
		t.Fatalf("%d security groups, want upstream's one per Service:\n%v", len(upSnap.sgs), upSnap)
	}
	if state["pinned"].fipID != reserved.ID {
		t.Fatalf("the pinned Service has %s, want the operator's %s", state["pinned"].ip, reserved.FloatingIP)
	}

	// The switch, as docs/install/upstream-ccm.md says: upstream goes (helm uninstall),
	// then Stackward starts with the same cloud.conf and cluster name.
	upstream.Stop()
	if exited, _ := upstream.Exited(); !exited {
		t.Fatal("the upstream CCM still runs")
	}
	// What it did, it did with rbac: the apiserver refused it nothing.
	if refused := forbidden(t, upstream.LogPath); len(refused) > 0 {
		t.Errorf("with %s the apiserver refused the upstream CCM %d requests, e.g.:\n%s", rbac.Name, len(refused), strings.Join(refused[:min(len(refused), 5)], "\n"))
	}
	// An operator (or an older upstream release) removed the annotation.
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, lbIDKey))
	if _, err := cp.Admin.CoreV1().Services(ns).Patch(ctx, "bare", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Events carry whole seconds.
	switched := metav1.NewTime(time.Now().Truncate(time.Second))
	stackward, err := cp.RunCCM(ctx, conf, routeArgs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stackward)

	// Every load balancer upstream made becomes this cluster's.
	waitCloud(ctx, t, api, 3*time.Minute, "every load balancer adopted and ACTIVE", func(s *snapshot) bool {
		for _, lb := range s.lbs {
			if !slices.Contains(lb.Tags, adoptedTag) || lb.ProvisioningStatus != "ACTIVE" {
				return false
			}
		}
		return true
	})
	for _, k := range kinds {
		waitService(ctx, t, cp, ns, k.name, 2*time.Minute, "synced by Stackward", func(s *corev1.Service) bool {
			return hasEventSince(ctx, cp, ns, k.name, "EnsuredLoadBalancer", switched)
		})
	}
	after := waitCloud(ctx, t, api, 30*time.Second, "the cloud read", func(*snapshot) bool { return true })
	t.Run("no load balancer, floating IP or security group is made by the switch", func(t *testing.T) {
		if !sameKeys(upSnap.lbs, after.lbs) || !sameKeys(upSnap.fips, after.fips) || !sameKeys(upSnap.sgs, after.sgs) {
			t.Errorf("before the switch:\n%v\nafter:\n%v", upSnap, after)
		}
	})
	t.Run("upstream's listeners, pools and health monitors are kept as they are", func(t *testing.T) {
		for id, want := range upSnap.children {
			if got := after.children[id]; !slices.Equal(got, want) {
				t.Errorf("load balancer %s (%s): children %v, upstream made %v", id, upSnap.lbs[id].Name, got, want)
			}
		}
	})
	for _, k := range kinds {
		c := state[k.name]
		t.Run(k.sentence+" keeps its address", func(t *testing.T) {
			s, err := cp.Admin.CoreV1().Services(ns).Get(ctx, k.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c.row.ipKept = ingressIP(s) == c.ip
			if !c.row.ipKept {
				t.Errorf("address %s, upstream gave %s; events: %s", ingressIP(s), c.ip, events(ctx, cp, ns, k.name))
			}
		})
		if _, ok := after.lbs[c.lbID]; ok {
			c.row.lbsAfterSwitch = 1
		}
		c.row.fipsAfterSwitch = countFIP(after.fipOf(c.ip))
	}
	t.Run("the switch records no Warning", func(t *testing.T) {
		for _, k := range kinds {
			for _, e := range warningsSince(ctx, cp, ns, k.name, switched) {
				t.Errorf("%s: %s", k.sentence, e)
			}
		}
	})
	t.Run("nodes keep what upstream set", func(t *testing.T) {
		for name, b := range before {
			n, err := cp.Admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range []string{corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, corev1.LabelTopologyRegion} {
				if n.Labels[l] != b.Labels[l] {
					t.Errorf("%s: %s %q, upstream set %q", name, l, n.Labels[l], b.Labels[l])
				}
			}
			if n.Spec.ProviderID != b.Spec.ProviderID {
				t.Errorf("%s: providerID %q, upstream set %q", name, n.Spec.ProviderID, b.Spec.ProviderID)
			}
		}
	})

	t.Run("a new port lands on the adopted load balancer", func(t *testing.T) {
		c := state["plain"]
		s, err := cp.Admin.CoreV1().Services(ns).Get(ctx, "plain", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Spec.Ports = append(s.Spec.Ports, tcp(443))
		if _, err := cp.Admin.CoreV1().Services(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			ls, err := api.listeners(ctx, c.lbID)
			return err == nil && slices.ContainsFunc(ls, func(l listeners.Listener) bool { return l.Protocol == "TCP" && l.ProtocolPort == 443 }), nil
		}); err != nil {
			t.Fatalf("no TCP/443 listener on %s: %v; events: %s", c.lbID, err, events(ctx, cp, ns, "plain"))
		}
		now, err := api.snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !sameKeys(upSnap.lbs, now.lbs) || !sameKeys(upSnap.fips, now.fips) {
			t.Errorf("the change made cloud resources:\n%v", now)
		}
	})

	t.Run("routes stay and follow a node's removal", func(t *testing.T) {
		waitRoutes("Stackward keeps upstream's routes", wantRoutes)
		gone := cloud.Name() + "-up-3"
		nodes[gone].Process.Stop()
		if err := cp.Admin.CoreV1().Nodes().Delete(ctx, gone, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		want := slices.DeleteFunc(slices.Clone(wantRoutes), func(r string) bool { return strings.HasSuffix(r, " via "+nodeIPs[gone]) })
		waitRoutes("the removed node's route is deleted", want)
	})

	for _, k := range kinds {
		c := state[k.name]
		t.Run("deleting "+k.sentence+" leaves what upstream would have left", func(t *testing.T) {
			if err := cp.Admin.CoreV1().Services(ns).Delete(ctx, k.name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				_, err := cp.Admin.CoreV1().Services(ns).Get(ctx, k.name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			}); err != nil {
				t.Fatalf("the Service kept its finalizer: %s", events(ctx, cp, ns, k.name))
			}
			s := waitCloud(ctx, t, api, time.Minute, "the load balancer gone or kept", func(s *snapshot) bool {
				_, ok := s.lbs[c.lbID]
				return ok == k.lbKeptOnDelete && (!ok || s.lbs[c.lbID].ProvisioningStatus == "ACTIVE")
			})
			if _, ok := s.lbs[c.lbID]; ok {
				c.row.lbsAfterDel = 1
			}
			if c.fipID != "" {
				f, ok := s.fips[c.fipID]
				c.row.fipsAfterD = countFIP(f.ID)
				switch {
				case k.fipKept || k.lbKeptOnDelete:
					if !ok {
						t.Errorf("floating IP %s released, upstream would have kept it", c.ip)
					} else if !k.lbKeptOnDelete && f.PortID != "" {
						t.Errorf("floating IP %s still on port %s", c.ip, f.PortID)
					}
				case ok:
					t.Errorf("floating IP %s kept (%q), upstream would have released it", c.ip, f.Description)
				}
			}
			for _, e := range warningsSince(ctx, cp, ns, k.name, switched) {
				t.Errorf("%s", e)
			}
		})
	}
	final, err := api.snapshot(ctx)
	if err != nil || len(final.lbs) != 0 || len(final.fips) != 2 || len(final.sgs) != 0 {
		t.Fatalf("after every delete (%v):\n%v\nwant only the keep-floatingip and the operator's floating IPs", err, final)
	}

	var b strings.Builder
	b.WriteString("\n| Service | IP kept | LBs before / after switch / after delete | FIPs before / after switch / after delete |\n| --- | --- | --- | --- |\n")
	for _, k := range kinds {
		r := state[k.name].row
		kept := "n"
		if r.ipKept {
			kept = "y"
		}
		fmt.Fprintf(&b, "| %s | %s | %d / %d / %d | %d / %d / %d |\n", k.sentence, kept, r.lbsBefore, r.lbsAfterSwitch, r.lbsAfterDel, r.fipsBefore, r.fipsAfterSwitch, r.fipsAfterD)
	}
	fmt.Fprintf(&b, "| the whole cloud | | %d / %d / %d | %d / %d / %d |\n", len(upSnap.lbs), len(after.lbs), len(final.lbs), len(upSnap.fips), len(after.fips), len(final.fips))
	t.Log(b.String())
}

// forbidden are the lines of a log where the apiserver refused a request.
func forbidden(t *testing.T, logPath string) []string {
	t.Helper()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "is forbidden") {
			out = append(out, l)
		}
	}
	return out
}
