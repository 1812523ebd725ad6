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
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

// The phases of Run, in its order.

// upstreamInitializesNodes starts the upstream CCM and three nodes from
// framework.NodeIP(firstNode+1), and waits until upstream has initialized
// each (providerID, no uninitialized taint, a pod CIDR).
func (s *scenario) upstreamInitializesNodes(ctx context.Context, t *testing.T, firstNode int) {
	cp, cloud := s.cp, s.cloud
	s.upstream = cp.StartUpstreamCCM(ctx, t, s.rbac, s.conf, append([]string{"--cluster-name=" + clusterName, "--leader-elect=false",
		"--secure-port=0", "--use-service-account-credentials=false", "--node-monitor-period=2s", "--v=2"}, s.routeArgs...)...)

	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("%s-up-%d", cloud.Name(), i)
		cloud.CreateServer(t, name, firstNode+i, "m1.small", "az-1")
		t.Cleanup(func() { _ = cp.Admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		s.nodes[name] = cp.StartNode(t, framework.NodeOptions{Name: name, IP: framework.NodeIP(firstNode + i)})
		s.nodeIPs[name] = framework.NodeIP(firstNode + i)
	}
	for name := range s.nodes {
		n, err := cp.WaitForNode(ctx, name, 3*time.Minute, func(n *corev1.Node) bool {
			return n.Spec.ProviderID != "" && !framework.HasTaint(n, "node.cloudprovider.kubernetes.io/uninitialized") && n.Spec.PodCIDR != ""
		})
		if err != nil {
			t.Fatalf("the upstream CCM did not initialize node %s: %v\n%s", name, err, s.upstream.Tail(6000))
		}
		s.before[name] = n
	}
}

// upstreamMakesLoadBalancers creates one Service of each kind and waits
// until upstream gave it an address and its load-balancer-id annotation.
func (s *scenario) upstreamMakesLoadBalancers(ctx context.Context, t *testing.T) {
	cp, ns := s.cp, s.ns
	if _, err := cp.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropServices(t, cp, ns) })

	// The operator reserved the address spec.loadBalancerIP names: with a
	// project member's credentials (the lab's, as in most clusters) neither
	// CCM may allocate a chosen address (Neutron's create_floatingip:
	// floating_ip_address is admin_only).
	reserved, err := floatingips.Create(ctx, s.api.Neutron, floatingips.CreateOpts{FloatingNetworkID: s.api.NetworkID(ctx, t, framework.FloatingNetwork),
		Description: "reserved by the operator for " + ns + "/pinned"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	s.reserved = reserved
	for _, k := range kinds {
		c := &caseState{pinnedFIP: reserved.FloatingIP}
		s.state[k.name] = c
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: k.name, Annotations: map[string]string{}},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": k.name}, Ports: []corev1.ServicePort{tcp(80)}},
		}
		if k.edit != nil {
			k.edit(svc, c)
		}
		if k.shares != "" {
			svc.Annotations[lbIDKey] = s.state[k.shares].lbID
		}
		for attempt := 1; ; attempt++ {
			if _, err := cp.Admin.CoreV1().Services(ns).Create(ctx, svc.DeepCopy(), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			got := waitService(ctx, t, cp, ns, k.name, 3*time.Minute, "the upstream CCM gives it an address and writes "+lbIDKey, func(svc *corev1.Service) bool {
				return ingressIP(svc) != "" && svc.Annotations[lbIDKey] != ""
			})
			c.ip, c.lbID = ingressIP(got), got.Annotations[lbIDKey]
			if k.shares != "" || !s.strandedByOctavia(ctx, t, c.lbID) {
				break
			}
			// Upstream's own create, stranded by Octavia (stranded.go in
			// pkg/loadbalancer): upstream publishes it though it never
			// serves, and Stackward would replace it, so the takeover
			// would not start from what upstream meant to make. Its user
			// creates the Service again.
			if attempt == 3 {
				t.Fatalf("%s: Octavia stranded upstream's create of load balancer %s three times (ACTIVE, its listeners PENDING_CREATE); the lab's Octavia is too loaded for the takeover's precondition", k.sentence, c.lbID)
			}
			t.Logf("%s: Octavia stranded upstream's create of load balancer %s (ACTIVE, its listeners PENDING_CREATE); creating the Service again", k.sentence, c.lbID)
			dropService(ctx, t, cp, ns, k.name)
		}
	}
}

// strandedByOctavia waits up to a minute for the listeners of load
// balancer id to be ACTIVE, and says whether they stayed PENDING_CREATE
// under an ACTIVE load balancer: a fully populated create Octavia did not
// finish.
func (s *scenario) strandedByOctavia(ctx context.Context, t *testing.T, id string) bool {
	t.Helper()
	stranded := false
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		lb, err := loadbalancers.Get(ctx, s.api.Octavia, id).Extract()
		if err != nil {
			return false, nil
		}
		ls, err := s.api.listeners(ctx, id)
		if err != nil {
			return false, nil
		}
		stranded = lb.ProvisioningStatus == "ACTIVE" && len(ls) > 0
		for _, l := range ls {
			if l.ProvisioningStatus != "PENDING_CREATE" {
				stranded = false
			}
		}
		active := lb.ProvisioningStatus == "ACTIVE"
		for _, l := range ls {
			active = active && l.ProvisioningStatus == "ACTIVE"
		}
		return active, nil
	})
	return err != nil && stranded
}

// upstreamRoutesPodCIDRs waits until upstream routes every node's pod CIDR.
func (s *scenario) upstreamRoutesPodCIDRs(ctx context.Context, t *testing.T) {
	for name, n := range s.before {
		s.wantRoutes = append(s.wantRoutes, n.Spec.PodCIDR+" via "+s.nodeIPs[name])
	}
	slices.Sort(s.wantRoutes)
	s.waitRoutes(ctx, t, "the upstream CCM routes every node's pod CIDR", s.wantRoutes)
}

// routes are the router's routes as "destination via next hop", sorted.
func (s *scenario) routes(ctx context.Context) ([]string, error) {
	rs, err := s.api.RoutesOf(ctx, s.routerID)
	var out []string
	for _, r := range rs {
		out = append(out, r.DestinationCIDR+" via "+r.NextHop)
	}
	slices.Sort(out)
	return out, err
}

// waitRoutes waits until the router has exactly want.
func (s *scenario) waitRoutes(ctx context.Context, t *testing.T, what string, want []string) {
	t.Helper()
	var got []string
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		got, err = s.routes(ctx)
		return err == nil && slices.Equal(got, want), nil
	}); err != nil {
		t.Fatalf("%s: routes %v (%v), want %v", what, got, err, want)
	}
}

// recordWhatUpstreamMade reads the cloud before the switch and checks that
// upstream made what each kind of Service should have: its load balancer
// at its address, a floating IP unless internal, a security group each,
// and the operator's floating IP on the pinned Service.
func (s *scenario) recordWhatUpstreamMade(ctx context.Context, t *testing.T) {
	upSnap, err := s.api.snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.upSnap = upSnap
	for _, k := range kinds {
		c := s.state[k.name]
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
	if s.state["pinned"].fipID != s.reserved.ID {
		t.Fatalf("the pinned Service has %s, want the operator's %s", s.state["pinned"].ip, s.reserved.FloatingIP)
	}
}

// switchToStackward is the switch, as docs/install/upstream-ccm.md says:
// upstream goes (helm uninstall), then Stackward starts with the same
// cloud.conf and cluster name.
func (s *scenario) switchToStackward(ctx context.Context, t *testing.T) {
	s.upstream.Stop()
	if exited, _ := s.upstream.Exited(); !exited {
		t.Fatal("the upstream CCM still runs")
	}
	// What it did, it did with rbac: the apiserver refused it nothing.
	if refused := forbidden(t, s.upstream.LogPath); len(refused) > 0 {
		t.Errorf("with %s the apiserver refused the upstream CCM %d requests, e.g.:\n%s", s.rbac.Name, len(refused), strings.Join(refused[:min(len(refused), 5)], "\n"))
	}
	// An operator (or an older upstream release) removed the annotation.
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, lbIDKey))
	if _, err := s.cp.Admin.CoreV1().Services(s.ns).Patch(ctx, "bare", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Events carry whole seconds.
	s.switched = metav1.NewTime(time.Now().Truncate(time.Second))
	stackward, err := s.cp.RunCCM(ctx, s.conf, s.routeArgs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stackward)
}

// stackwardAdoptsEverything waits until every load balancer upstream made
// is this cluster's and ACTIVE and every Service is synced by Stackward,
// then reads the cloud.
func (s *scenario) stackwardAdoptsEverything(ctx context.Context, t *testing.T) {
	waitCloud(ctx, t, s.api, 3*time.Minute, "every load balancer adopted and ACTIVE", func(snap *snapshot) bool {
		for _, lb := range snap.lbs {
			if !slices.Contains(lb.Tags, adoptedTag) || lb.ProvisioningStatus != "ACTIVE" {
				return false
			}
		}
		return true
	})
	for _, k := range kinds {
		waitService(ctx, t, s.cp, s.ns, k.name, 2*time.Minute, "synced by Stackward", func(*corev1.Service) bool {
			return hasEventSince(ctx, s.cp, s.ns, k.name, "EnsuredLoadBalancer", s.switched)
		})
	}
	s.after = waitCloud(ctx, t, s.api, 30*time.Second, "the cloud read", func(*snapshot) bool { return true })
}

// checkTheSwitchKeptEverything: nothing new in the cloud, upstream's
// load balancer children as they were, every address kept, no Warning,
// the nodes as upstream set them.
func (s *scenario) checkTheSwitchKeptEverything(ctx context.Context, t *testing.T) {
	cp, ns, upSnap, after := s.cp, s.ns, s.upSnap, s.after
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
		c := s.state[k.name]
		t.Run(k.sentence+" keeps its address", func(t *testing.T) {
			svc, err := cp.Admin.CoreV1().Services(ns).Get(ctx, k.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c.row.ipKept = ingressIP(svc) == c.ip
			if !c.row.ipKept {
				t.Errorf("address %s, upstream gave %s; events: %s", ingressIP(svc), c.ip, events(ctx, cp, ns, k.name))
			}
		})
		if _, ok := after.lbs[c.lbID]; ok {
			c.row.lbsAfterSwitch = 1
		}
		c.row.fipsAfterSwitch = countFIP(after.fipOf(c.ip))
	}
	t.Run("the switch records no Warning", func(t *testing.T) {
		for _, k := range kinds {
			for _, e := range warningsSince(ctx, cp, ns, k.name, s.switched) {
				t.Errorf("%s: %s", k.sentence, e)
			}
		}
	})
	t.Run("nodes keep what upstream set", func(t *testing.T) {
		for name, b := range s.before {
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
}

// checkAChangeLandsOnTheAdoptedLoadBalancer adds a port to the plain
// Service: its listener appears on upstream's load balancer and nothing
// new is made.
func (s *scenario) checkAChangeLandsOnTheAdoptedLoadBalancer(ctx context.Context, t *testing.T) {
	t.Run("a new port lands on the adopted load balancer", func(t *testing.T) {
		c := s.state["plain"]
		svc, err := s.cp.Admin.CoreV1().Services(s.ns).Get(ctx, "plain", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svc.Spec.Ports = append(svc.Spec.Ports, tcp(443))
		if _, err := s.cp.Admin.CoreV1().Services(s.ns).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			ls, err := s.api.listeners(ctx, c.lbID)
			return err == nil && slices.ContainsFunc(ls, func(l listeners.Listener) bool { return l.Protocol == "TCP" && l.ProtocolPort == 443 }), nil
		}); err != nil {
			t.Fatalf("no TCP/443 listener on %s: %v; events: %s", c.lbID, err, events(ctx, s.cp, s.ns, "plain"))
		}
		now, err := s.api.snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !sameKeys(s.upSnap.lbs, now.lbs) || !sameKeys(s.upSnap.fips, now.fips) {
			t.Errorf("the change made cloud resources:\n%v", now)
		}
	})
}

// checkRoutesFollowNodes: Stackward keeps upstream's routes, and removes
// a deleted node's.
func (s *scenario) checkRoutesFollowNodes(ctx context.Context, t *testing.T) {
	t.Run("routes stay and follow a node's removal", func(t *testing.T) {
		s.waitRoutes(ctx, t, "Stackward keeps upstream's routes", s.wantRoutes)
		gone := s.cloud.Name() + "-up-3"
		s.nodes[gone].Process.Stop()
		if err := s.cp.Admin.CoreV1().Nodes().Delete(ctx, gone, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		want := slices.DeleteFunc(slices.Clone(s.wantRoutes), func(r string) bool { return strings.HasSuffix(r, " via "+s.nodeIPs[gone]) })
		s.waitRoutes(ctx, t, "the removed node's route is deleted", want)
	})
}

// deleteEachService deletes the Services one by one: each leaves what
// upstream would have left (its load balancer gone unless shared, its
// floating IP released unless kept), without a Warning.
func (s *scenario) deleteEachService(ctx context.Context, t *testing.T) {
	cp, ns := s.cp, s.ns
	for _, k := range kinds {
		c := s.state[k.name]
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
			snap := waitCloud(ctx, t, s.api, time.Minute, "the load balancer gone or kept", func(snap *snapshot) bool {
				_, ok := snap.lbs[c.lbID]
				return ok == k.lbKeptOnDelete && (!ok || snap.lbs[c.lbID].ProvisioningStatus == "ACTIVE")
			})
			if _, ok := snap.lbs[c.lbID]; ok {
				c.row.lbsAfterDel = 1
			}
			if c.fipID != "" {
				f, ok := snap.fips[c.fipID]
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
			for _, e := range warningsSince(ctx, cp, ns, k.name, s.switched) {
				t.Errorf("%s", e)
			}
		})
	}
}

// checkWhatIsLeft: after every delete, only the keep-floatingip Service's
// and the operator's floating IPs are left.
func (s *scenario) checkWhatIsLeft(ctx context.Context, t *testing.T) {
	final, err := s.api.snapshot(ctx)
	if err != nil || len(final.lbs) != 0 || len(final.fips) != 2 || len(final.sgs) != 0 {
		t.Fatalf("after every delete (%v):\n%v\nwant only the keep-floatingip and the operator's floating IPs", err, final)
	}
	s.final = final
}

// logTable logs what each kind of Service had before the switch, after it
// and after its deletion.
func (s *scenario) logTable(t *testing.T) {
	var b strings.Builder
	b.WriteString("\n| Service | IP kept | LBs before / after switch / after delete | FIPs before / after switch / after delete |\n| --- | --- | --- | --- |\n")
	for _, k := range kinds {
		r := s.state[k.name].row
		kept := "n"
		if r.ipKept {
			kept = "y"
		}
		fmt.Fprintf(&b, "| %s | %s | %d / %d / %d | %d / %d / %d |\n", k.sentence, kept, r.lbsBefore, r.lbsAfterSwitch, r.lbsAfterDel, r.fipsBefore, r.fipsAfterSwitch, r.fipsAfterD)
	}
	fmt.Fprintf(&b, "| the whole cloud | | %d / %d / %d | %d / %d / %d |\n", len(s.upSnap.lbs), len(s.after.lbs), len(s.final.lbs), len(s.upSnap.fips), len(s.after.fips), len(s.final.fips))
	t.Log(b.String())
}
