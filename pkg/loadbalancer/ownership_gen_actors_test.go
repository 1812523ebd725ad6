package loadbalancer_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/loadbalancer"
	"github.com/stackward/stackward/pkg/openstack"
)

// The actors of the ownership test other than cluster Y's Managers, and
// the cloud snapshot the invariants are checked on. Everything X and the
// operator own is made here, before the first step, through the raw
// gophercloud clients (upstream CCM X, the operator) or X's own Manager.

const (
	genCluster = "kubernetes"
	uidX       = "uid-x"
	uidY       = "uid-y"
)

// The servers of the cloud: Y's two nodes, X's node and the operator's VM.
var genServers = map[string]string{"node-1": "10.0.0.11", "node-2": "10.0.0.12", "node-x": "10.0.0.13", "op-vm": "10.0.0.21"}

// genPorts are the Service ports by name, the same in X and Y.
var genPorts = map[string][2]int32{"web": {80, 30080}, "api": {8080, 30880}, "db": {5432, 31432}, "app": {9090, 30990}}

// cloud is the simulator, the adapters X's Managers use (user demo), the
// raw clients the operator, upstream CCM X and the checks use (demo too),
// and Y's own credential and adapters (ownership_gen_rotation_test.go).
type cloud struct {
	sim              *cloudsim.Sim
	oct              loadbalancer.Octavia
	net              *openstack.Neutron
	y                *yCredential
	yOct             loadbalancer.Octavia
	octavia, neutron *gophercloud.ServiceClient
	subnetID         string
	privateNet       string
	publicNet        string
	publicSubnet     string
	servers          map[string]string // name → server ID
	serverPort       map[string]string // name → port ID
}

func startCloud(t *testing.T) *cloud {
	t.Helper()
	sd := cloudsim.DefaultSeed()
	sd.Servers = nil
	sd.Users = append(sd.Users, cloudsim.SeedUser{Name: yUser, Password: yPassword(0), Project: "demo"})
	for _, name := range slices.Sorted(maps.Keys(genServers)) {
		sd.Servers = append(sd.Servers, cloudsim.ServerSpec{Name: name, Flavor: "m1.small",
			NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: genServers[name]}}})
	}
	sim, err := cloudsim.New(cloudsim.Options{Seed: sd, RandSeed: 1, OctaviaDelay: 3 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	authURL, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	// A short HTTP timeout: an injected hang costs a second, not five.
	clients := simClients(t, authURL, 700*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := &cloud{sim: sim, net: clients.Neutron, servers: map[string]string{}, serverPort: map[string]string{}}
	if c.oct, err = openstack.NewOctavia(clients); err != nil {
		t.Fatal(err)
	}
	if c.octavia, err = clients.ServiceClient("load-balancer"); err != nil {
		t.Fatal(err)
	}
	c.octavia.ResourceBase = c.octavia.Endpoint + "v2/"
	if c.neutron, err = clients.NeutronClient(); err != nil {
		t.Fatal(err)
	}
	if c.subnetID, err = c.net.SubnetOfAddress(ctx, "10.0.0.11"); err != nil {
		t.Fatal(err)
	}
	ext, err := c.net.ExternalNetworks(ctx)
	if err != nil || len(ext) != 1 {
		t.Fatalf("external networks %v: %v", ext, err)
	}
	c.publicNet = ext[0]
	subs, err := c.net.Subnets(ctx, c.publicNet, openstack.TagFilter{})
	if err != nil || len(subs) != 1 {
		t.Fatalf("public subnets %v: %v", subs, err)
	}
	c.publicSubnet = subs[0].ID
	if c.y, err = newYCredential(ctx, t.TempDir(), authURL); err != nil {
		t.Fatal(err)
	}
	if c.yOct, err = openstack.NewOctavia(c.y.clients); err != nil {
		t.Fatal(err)
	}
	for _, sv := range sim.Servers() {
		c.servers[sv.Name] = sv.ID
		if len(sv.PortIDs) > 0 {
			c.serverPort[sv.Name] = sv.PortIDs[0]
		}
		if c.privateNet == "" {
			p, err := ports.Get(ctx, c.neutron, sv.PortIDs[0]).Extract()
			if err != nil {
				t.Fatal(err)
			}
			c.privateNet = p.NetworkID
		}
	}
	return c
}

// manager is a fresh Manager of a cluster on that cluster's adapters: a
// restart or a failover of its CCM (no in-memory state).
func (c *cloud) manager(uid string) *loadbalancer.Manager {
	cfg := config.Defaults().LoadBalancer
	cfg.ManageSecurityGroups = true
	oct, net := c.oct, c.net
	if uid == uidY {
		oct, net = c.yOct, c.y.clients.Neutron
	}
	return &loadbalancer.Manager{Octavia: oct, Neutron: net, Config: cfg, SecurityGroups: net, Requeue: 3 * time.Millisecond,
		ClusterUID: func(context.Context) (string, error) { return uid, nil }}
}

func (c *cloud) node(name, reportedIP string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:   corev1.NodeSpec{ProviderID: "openstack:///" + c.servers[name]},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: reportedIP}}}}
}

func genService(ns, name string, uid int) *corev1.Service {
	p := genPorts[name]
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", uid)), Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: name, Protocol: corev1.ProtocolTCP, Port: p[0], NodePort: p[1]}}},
	}
}

// makeLB creates a load balancer with one listener, pool and member, as a
// person or the upstream CCM calls Octavia, and waits until it is ACTIVE.
func (c *cloud) makeLB(t *testing.T, name, desc string, tags []string, port, nodePort int, member string, listenerTags []string) loadbalancers.LoadBalancer {
	t.Helper()
	ctx := context.Background()
	lb, err := loadbalancers.Create(ctx, c.octavia, loadbalancers.CreateOpts{
		Name: name, Description: desc, VipSubnetID: c.subnetID, Tags: tags,
		Listeners: []listeners.CreateOpts{{Name: fmt.Sprintf("listener_0_%s", name), Protocol: listeners.ProtocolTCP, ProtocolPort: port, Tags: listenerTags,
			DefaultPool: &pools.CreateOpts{Name: "pool_0_" + name, Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin,
				Members: []pools.CreateMemberOpts{{Address: member, ProtocolPort: nodePort}}}}},
	}).Extract()
	if err != nil {
		t.Fatalf("create load balancer %s: %v", name, err)
	}
	if err := c.settle(); err != nil {
		t.Fatal(err)
	}
	return *lb
}

func (c *cloud) makeFIP(t *testing.T, portID, desc string) floatingips.FloatingIP {
	t.Helper()
	f, err := floatingips.Create(context.Background(), c.neutron, floatingips.CreateOpts{FloatingNetworkID: c.publicNet, PortID: portID, Description: desc}).Extract()
	if err != nil {
		t.Fatalf("create floating IP %q: %v", desc, err)
	}
	return *f
}

// settle waits until no load balancer is PENDING_*, so that a snapshot
// shows what the last step did, not a half-applied change. The simulator
// settles in milliseconds; the bound is for a starved machine (a long run
// beside the e2e suite took 27 s for one seed).
func (c *cloud) settle() error {
	const bound = 30 * time.Second
	deadline := time.Now().Add(bound)
	for {
		pages, err := loadbalancers.List(c.octavia, loadbalancers.ListOpts{}).AllPages(context.Background())
		if err != nil {
			return fmt.Errorf("list load balancers: %w", err)
		}
		lbs, err := loadbalancers.ExtractLoadBalancers(pages)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(lbs, func(lb loadbalancers.LoadBalancer) bool { return strings.HasPrefix(lb.ProvisioningStatus, "PENDING") }) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("load balancers still PENDING after %s", bound)
		}
		time.Sleep(3 * time.Millisecond)
	}
}

// setupOthers makes what X and the operator own. Upstream CCM X made the
// load balancers of X's Services a/api and b/db exactly as upstream makes
// them; Stackward X runs a/web (keeping its floating IP) and b/web. The
// operator has a plain load balancer, one it lets namespace a share, one
// that merely has the name Y's b/api would get, a VM, a free port, a
// reserved floating IP and an ssh security group on its VM and on node-1.
func (w *world) setupOthers(t *testing.T) {
	t.Helper()
	c := w.c
	for _, ref := range []string{"a/api", "b/db"} {
		ns, name, _ := strings.Cut(ref, "/")
		lbName := fmt.Sprintf("kube_service_%s_%s_%s", genCluster, ns, name)
		p := genPorts[name]
		lb := c.makeLB(t, lbName, fmt.Sprintf("Kubernetes external service %s from cluster %s", ref, genCluster), []string{lbName},
			int(p[0]), int(p[1]), genServers["node-x"], []string{lbName})
		f := c.makeFIP(t, lb.VipPortID, fmt.Sprintf("Floating IP for Kubernetes external service %s from cluster %s", ref, genCluster))
		w.owner[lb.ID], w.fipOwner[f.ID] = ownerX, ownerX
		w.upstreamX[ref] = lb.ID
		w.upstreamXFIP = append(w.upstreamXFIP, f.FloatingIP)
	}
	for _, o := range []struct {
		key, name string
		tags      []string
		port      int
	}{
		{"plain", "ops-lb", nil, 443},
		{"consent", "ops-shared", []string{"kube_shared_with=a"}, 8443},
		{"named", "kube_service_kubernetes_b_api", nil, 9000},
	} {
		lb := c.makeLB(t, o.name, "made by hand", o.tags, o.port, 30999, genServers["op-vm"], nil)
		w.owner[lb.ID] = ownerOp
		w.opLB[o.key] = lb.ID
		if o.key == "plain" {
			f := c.makeFIP(t, lb.VipPortID, "ops")
			w.fipOwner[f.ID] = ownerOp
		}
	}
	reserved := c.makeFIP(t, "", "reserved by the operator")
	w.fipOwner[reserved.ID], w.opReservedFIP = ownerOp, reserved.FloatingIP
	ctx := context.Background()
	g, err := groups.Create(ctx, c.neutron, groups.CreateOpts{Name: "operator-ssh", Description: "ssh from the bastion"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rules.Create(ctx, c.neutron, rules.CreateOpts{SecGroupID: g.ID, Direction: rules.DirIngress, EtherType: rules.EtherType4,
		Protocol: rules.ProtocolTCP, PortRangeMin: 22, PortRangeMax: 22, RemoteIPPrefix: "192.0.2.10/32"}).Extract(); err != nil {
		t.Fatal(err)
	}
	w.groupOwner[g.ID] = ownerOp
	for _, sv := range []string{"op-vm", "node-1"} {
		p, err := ports.Get(ctx, c.neutron, c.serverPort[sv]).Extract()
		if err != nil {
			t.Fatal(err)
		}
		sgs := append(slices.Clone(p.SecurityGroups), g.ID)
		if _, err := ports.Update(ctx, c.neutron, p.ID, ports.UpdateOpts{SecurityGroups: &sgs}).Extract(); err != nil {
			t.Fatal(err)
		}
	}
	free, err := ports.Create(ctx, c.neutron, ports.CreateOpts{NetworkID: c.privateNet, Name: "op-free",
		FixedIPs: []ports.IP{{SubnetID: c.subnetID, IPAddress: "10.0.0.40"}}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	w.opFreePort = free.ID

	// Stackward X and its Services.
	for i, ref := range []string{"a/web", "b/web"} {
		ns, name, _ := strings.Cut(ref, "/")
		svc := genService(ns, name, 9000+i)
		if ref == "a/web" {
			svc.Annotations[loadbalancer.AnnotationKeepFloatingIP] = "true"
		}
		w.xSvcs[ref] = &genSvc{svc: svc}
		w.xUIDs = append(w.xUIDs, string(svc.UID))
		if err := w.syncX(ref); err != "ok" {
			t.Fatalf("X's Service %s: %s", ref, err)
		}
	}
}

// syncX runs X's service controller for one of X's Services until it
// converges (X acts alone: nothing else runs meanwhile).
func (w *world) syncX(ref string) string {
	s := w.xSvcs[ref]
	nodes := []*corev1.Node{w.c.node("node-x", genServers["node-x"])}
	for range 40 {
		st, err := w.mX.Ensure(context.Background(), genCluster, s.svc, nodes)
		if err == nil {
			s.svc.Status.LoadBalancer = *st
			return "ok"
		}
		if !isRetryErr(err) {
			return err.Error()
		}
		time.Sleep(3 * time.Millisecond)
	}
	return "no convergence"
}

// updateAll is the service controller's node sync: Update for every
// Service of Y that has its load balancer, a few calls each.
func (w *world) updateAll(rt *rand.Rand) string {
	var out []string
	for _, ref := range slices.Sorted(maps.Keys(w.ySvcs)) {
		g := w.ySvcs[ref]
		if g.deleting || g.statusGen < 0 {
			continue
		}
		res := "ok"
		for range 6 {
			err := w.mY[rt.Intn(2)].Update(context.Background(), genCluster, g.svc, w.yNodes())
			if err == nil || !isRetryErr(err) {
				if err != nil {
					res = short(err)
				}
				break
			}
			time.Sleep(3 * time.Millisecond)
		}
		out = append(out, ref+": "+res)
	}
	return strings.Join(out, ", ")
}

// recreateX deletes one of X's Services and makes it again with a new UID,
// as X's namespace user would; X acts alone.
func (w *world) recreateX(s *step, ref string) string {
	g := w.xSvcs[ref]
	for range 40 {
		err := w.mX.Delete(context.Background(), genCluster, g.svc)
		if err == nil {
			break
		}
		if !isRetryErr(err) {
			return "X Delete: " + short(err)
		}
		time.Sleep(3 * time.Millisecond)
	}
	if err := w.c.settle(); err != nil {
		return err.Error()
	}
	ns, name, _ := strings.Cut(ref, "/")
	w.nextUID++
	fresh := genService(ns, name, 9000+w.nextUID)
	fresh.Annotations = g.svc.Annotations
	w.xSvcs[ref] = &genSvc{svc: fresh}
	w.xUIDs = append(w.xUIDs, string(fresh.UID))
	res := w.syncX(ref)
	if res == "ok" {
		s.violations = append(s.violations, w.foreign(ownerX, ref, "Ensure", &fresh.Status.LoadBalancer)...)
	}
	return res
}

// The snapshot: what the invariants compare, read through the raw
// clients. Provisioning and operating status are left out: they are
// Octavia's, not anybody's change.
type snapshot struct {
	lbs    map[string]lbSnap
	fips   map[string]floatingips.FloatingIP
	ports  map[string]ports.Port
	groups map[string]groupSnap
}

type lbSnap struct {
	lb        loadbalancers.LoadBalancer
	listeners map[string]string // ID → protocol/port, tags, members
}

type groupSnap struct {
	g     groups.SecGroup
	rules string
}

func (s lbSnap) String() string {
	var ls []string
	for _, id := range slices.Sorted(maps.Keys(s.listeners)) {
		ls = append(ls, s.listeners[id])
	}
	tags := slices.Sorted(slices.Values(s.lb.Tags))
	return fmt.Sprintf("%s %q desc=%q vip=%s tags=%v listeners=[%s]", s.lb.ID, s.lb.Name, s.lb.Description, s.lb.VipAddress, tags, strings.Join(ls, "; "))
}

func (s groupSnap) String() string {
	return fmt.Sprintf("%s %q desc=%q tags=%v rules=%s", s.g.ID, s.g.Name, s.g.Description, slices.Sorted(slices.Values(s.g.Tags)), s.rules)
}

func fipString(f floatingips.FloatingIP) string {
	return fmt.Sprintf("%s %s port=%q desc=%q", f.ID, f.FloatingIP, f.PortID, f.Description)
}

func (c *cloud) snapshot() (*snapshot, error) {
	ctx := context.Background()
	s := &snapshot{lbs: map[string]lbSnap{}, fips: map[string]floatingips.FloatingIP{}, ports: map[string]ports.Port{}, groups: map[string]groupSnap{}}
	pages, err := loadbalancers.List(c.octavia, loadbalancers.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list load balancers: %w", err)
	}
	lbs, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		return nil, err
	}
	for _, lb := range lbs {
		s.lbs[lb.ID] = lbSnap{lb: lb, listeners: map[string]string{}}
	}
	if pages, err = pools.List(c.octavia, pools.ListOpts{}).AllPages(ctx); err != nil {
		return nil, fmt.Errorf("list pools: %w", err)
	}
	ps, err := pools.ExtractPools(pages)
	if err != nil {
		return nil, err
	}
	members := map[string][]string{}
	for _, p := range ps {
		mp, err := pools.ListMembers(c.octavia, p.ID, pools.ListMembersOpts{}).AllPages(ctx)
		if err != nil {
			return nil, fmt.Errorf("list members of pool %s: %w", p.ID, err)
		}
		ms, err := pools.ExtractMembers(mp)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			members[p.ID] = append(members[p.ID], fmt.Sprintf("%s:%d", m.Address, m.ProtocolPort))
		}
		sort.Strings(members[p.ID])
	}
	if pages, err = listeners.List(c.octavia, listeners.ListOpts{}).AllPages(ctx); err != nil {
		return nil, fmt.Errorf("list listeners: %w", err)
	}
	ls, err := listeners.ExtractListeners(pages)
	if err != nil {
		return nil, err
	}
	for _, l := range ls {
		for _, ref := range l.Loadbalancers {
			if lb, ok := s.lbs[ref.ID]; ok {
				lb.listeners[l.ID] = fmt.Sprintf("%s/%d tags=%v members=%v", l.Protocol, l.ProtocolPort, slices.Sorted(slices.Values(l.Tags)), members[l.DefaultPoolID])
			}
		}
	}
	if pages, err = floatingips.List(c.neutron, floatingips.ListOpts{}).AllPages(ctx); err != nil {
		return nil, fmt.Errorf("list floating IPs: %w", err)
	}
	fs, err := floatingips.ExtractFloatingIPs(pages)
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		s.fips[f.ID] = f
	}
	if pages, err = ports.List(c.neutron, ports.ListOpts{}).AllPages(ctx); err != nil {
		return nil, fmt.Errorf("list ports: %w", err)
	}
	pl, err := ports.ExtractPorts(pages)
	if err != nil {
		return nil, err
	}
	for _, p := range pl {
		s.ports[p.ID] = p
	}
	if pages, err = groups.List(c.neutron, groups.ListOpts{}).AllPages(ctx); err != nil {
		return nil, fmt.Errorf("list security groups: %w", err)
	}
	gs, err := groups.ExtractGroups(pages)
	if err != nil {
		return nil, err
	}
	for _, g := range gs {
		var rs []string
		for _, r := range g.Rules {
			rs = append(rs, fmt.Sprintf("%s/%s/%d-%d/%s", r.Direction, r.Protocol, r.PortRangeMin, r.PortRangeMax, r.RemoteIPPrefix))
		}
		sort.Strings(rs)
		s.groups[g.ID] = groupSnap{g: g, rules: strings.Join(rs, ",")}
	}
	return s, nil
}
