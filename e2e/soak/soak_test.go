//go:build e2e

package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/approver"
	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/loadbalancer"
	"github.com/stackward/stackward/pkg/openstack"
)

func TestMain(m *testing.M) { framework.Main(m) }

const (
	clusterCIDR = "198.19.128.0/17"
	operatorVIP = "198.18.200.200"
	nodeBase    = 160 // node i is framework.NodeIP(nodeBase+i)
)

func env[T any](name string, def T, parse func(string) (T, error)) T {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	x, err := parse(v)
	if err != nil {
		panic(fmt.Sprintf("%s=%q: %v", name, v, err))
	}
	return x
}

// clouds are the soak's own OpenStack clients (they see the faults too).
type clouds struct {
	neutron, octavia *gophercloud.ServiceClient
}

func newClouds(ctx context.Context, t *testing.T, c framework.TestCloud) *clouds {
	t.Helper()
	cfg, _, err := config.Load(c.CloudConf(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := openstack.NewClients(ctx, cfg, openstack.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oct, err := cl.ServiceClient("load-balancer")
	if err != nil {
		t.Fatal(err)
	}
	oct.ResourceBase = oct.Endpoint + "v2/"
	net, err := cl.ServiceClient("network")
	if err != nil {
		t.Fatal(err)
	}
	net.ResourceBase = net.Endpoint + "v2.0/"
	return &clouds{neutron: net, octavia: oct}
}

// TestSoak runs the lab for STACKWARD_SOAK (default 3m) under a seeded
// random schedule (STACKWARD_SOAK_SEED replays one) and checks the
// invariants; STACKWARD_SOAK_REPORT names the JSON report (the SVG plot
// goes next to it).
func TestSoak(t *testing.T) {
	d := env("STACKWARD_SOAK", 3*time.Minute, time.ParseDuration)
	long := d >= 10*time.Minute
	seed := env("STACKWARD_SOAK_SEED", time.Now().UnixNano(), func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) })
	nNodes := env("STACKWARD_SOAK_NODES", map[bool]int{true: 20, false: 6}[long], strconv.Atoi)
	nServices := env("STACKWARD_SOAK_SERVICES", map[bool]int{true: 50, false: 12}[long], strconv.Atoi)
	reportPath := env("STACKWARD_SOAK_REPORT", filepath.Join(t.TempDir(), "soak.json"), func(s string) (string, error) { return filepath.Abs(s) })
	t.Logf("soak: seed %d (replay with STACKWARD_SOAK_SEED=%d), %s, %d nodes, %d services", seed, seed, d, nNodes, nServices)

	ctx, cancel := context.WithTimeout(context.Background(), d+15*time.Minute)
	defer cancel()
	sim := framework.StartSimCloud(t, framework.SimCloudOptions{OctaviaDelay: 500 * time.Millisecond})
	s := &soak{t: t, ctx: ctx, rng: rand.New(rand.NewPCG(uint64(seed), 0x50a4)), led: newLedger(), d: d,
		cp: framework.SharedControlPlane(t), cloud: sim.TestCloud(), sim: sim,
		nodes: map[string]*node{}, marked: map[string]bool{}, services: map[string]time.Time{}, nServices: nServices}
	s.report.Seed, s.report.Nodes, s.report.Services = seed, nNodes, nServices
	s.play(reportPath)
}

// play sets the lab up, runs the schedule, converges, cleans up, and
// writes and checks the report.
func (s *soak) play(reportPath string) {
	t, ctx, d, seed := s.t, s.ctx, s.d, s.report.Seed
	nNodes := s.report.Nodes
	s.api = newClouds(ctx, t, s.cloud)
	s.led.nodePrefix = s.nodePrefix()
	s.setUp(nNodes)
	t.Cleanup(s.tearDown)

	stopSampling := s.sample()
	s.run()
	s.converge()
	s.cleanUp()
	stopSampling()

	r := &s.report
	r.DurationSeconds = d.Seconds()
	s.led.mu.Lock()
	r.Invariants, r.Violations, r.Counts = s.led.inv, s.led.violations, s.led.counts
	s.led.mu.Unlock()
	r.RSSNote = "RSS and heap are of the test process, which runs stackward-ccm, stackward-approver and the simulator in-process (hollow kubelets and the control plane are other processes)"
	r.Summarize()
	if err := r.Write(reportPath, strings.TrimSuffix(reportPath, ".json")+".svg", d); err != nil {
		t.Error(err)
	}
	t.Logf("soak report %s: faults %v; counts %v; invariants %+v; convergence after the last fault %.1fs; lag p99 %.1fs; RSS %.0f -> %.0f MiB (max %.0f), heap %.0f -> %.0f MiB",
		reportPath, r.FaultsByKind, r.Counts, r.Invariants, r.ConvergenceSeconds, r.LagP99Seconds, r.RSSStartMiB, r.RSSEndMiB, r.RSSMaxMiB, r.HeapStartMiB, r.HeapEndMiB)
	for _, v := range r.Violations {
		t.Errorf("violation: %s", v)
	}
	if r.Invariants != (Invariants{}) {
		t.Errorf("invariants not all zero: %+v (seed %d)", r.Invariants, seed)
	}
	// Flat: the end may not be far above the start once warmed up.
	if r.HeapEndMiB > 2*r.HeapStartMiB+64 {
		t.Errorf("Go heap grew from %.0f to %.0f MiB (seed %d)", r.HeapStartMiB, r.HeapEndMiB, seed)
	}
}

// node is one lab node: a server and its hollow kubelet.
type node struct {
	name     string
	i        int
	serverID string
	kubelet  *framework.Node
	up       bool
	since    time.Time
	fip      string
}

type soak struct {
	t         *testing.T
	ctx       context.Context
	rng       *rand.Rand
	led       *ledger
	d         time.Duration
	cp        *framework.ControlPlane
	cloud     framework.TestCloud
	sim       *framework.SimCloud  // the simulator, nil on the real cloud
	downPorts bool                 // the simulator's "ports DOWN" fault is on
	marked    map[string]bool      // load balancers the admin marked ERROR (actAsAdmin)
	real      *realFaults          // the real cloud and its faults, nil on the simulator
	ccmReg    *prometheus.Registry // the CCM's metrics (its cloud calls)
	api       *clouds
	routerID  string
	conf      string
	ccmArgs   []string
	stopCCM   func()
	stopAppr  func()
	other     other
	armed     *armedFault // the Octavia provisioning fault waiting to fire
	before    string
	mu        sync.Mutex // nodes and services, read by the sampler
	nodes     map[string]*node
	services  map[string]time.Time // existing Services by name -> created
	nServices int
	report    Report
}

// nodePrefix begins the soak's node names: soak-, or real-soak- on the
// real cloud, so that the two soaks of one test binary, which share its
// control plane, never take each other's Nodes for their own.
func (s *soak) nodePrefix() string {
	if s.real != nil {
		return "real-soak-"
	}
	return "soak-"
}

func (s *soak) nodeName(i int) string { return fmt.Sprintf("%s%d", s.nodePrefix(), i) }

func (s *soak) elapsed() float64 { return time.Since(s.led.start).Seconds() }

func (s *soak) fault(kind, detail string, until float64) {
	s.report.Faults = append(s.report.Faults, Fault{At: s.elapsed(), Until: until, Kind: kind, Detail: detail})
}

func (s *soak) setUp(nNodes int) {
	t, ctx := s.t, s.ctx
	pages, err := routers.List(s.api.neutron, routers.ListOpts{Name: "lab-router"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := routers.ExtractRouters(pages)
	if len(rs) != 1 {
		t.Fatalf("lab-router: %v", rs)
	}
	s.routerID = rs[0].ID
	s.conf = s.cloud.CloudConf(t, "[Route]\nrouter-id = "+s.routerID+"\n")
	s.ccmArgs = []string{"--allocate-node-cidrs", "--configure-cloud-routes", "--cluster-cidr=" + clusterCIDR, "--route-reconciliation-period=5s"}
	// Short enough for the admin (actAsAdmin) to act within the schedule;
	// on the simulator longer than its "octavia stuck PENDING" hangs, which
	// end by themselves.
	stuckAfter := simStuckAfter
	if s.real != nil {
		stuckAfter = realStuckAfter
	}
	s.ccmArgs = append(s.ccmArgs, "--lb-stuck-after="+stuckAfter.String())
	s.startApprover()
	s.startCCM()
	factory := informers.NewSharedInformerFactory(s.cp.Admin, 0)
	s.led.watch(ctx, factory)
	s.watchReadyLoss(factory)
	for i := 1; i <= nNodes; i++ {
		s.join(s.nodeName(i), i)
	}
	s.setUpOther()
	if _, err := s.cp.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "soak"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func (s *soak) startCCM() {
	if s.ccmReg == nil {
		s.ccmReg = prometheus.NewRegistry()
	}
	stop, err := s.cp.RunCCMWithRegistry(s.ctx, s.conf, s.ccmReg, s.ccmArgs...)
	if err != nil {
		s.t.Fatal(err)
	}
	s.stopCCM = stop
}

func (s *soak) startApprover() {
	stop, err := s.cp.RunApprover(s.ctx, s.conf, approver.Options{Registerer: prometheus.NewRegistry()})
	if err != nil {
		s.t.Fatal(err)
	}
	s.stopAppr = stop
}

// join creates the node's server (reusing its address) and boots its kubelet.
func (s *soak) join(name string, i int) {
	srv := s.cloud.CreateServer(s.t, name, nodeBase+i, "m1.small", "az-1")
	ip := framework.NodeIP(nodeBase + i)
	s.led.gain(name, ip)
	k, err := s.cp.LaunchNode(framework.NodeOptions{Name: name, IP: ip})
	if err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	s.nodes[name] = &node{name: name, i: i, serverID: srv.ID, kubelet: k, up: true, since: time.Now()}
	s.mu.Unlock()
}

// setUpOther puts another cluster's node, pairs, routes and load balancer,
// and the operator's VRRP pair on our first node's port, on the shared
// router and network.
func (s *soak) setUpOther() {
	t, ctx, api := s.t, s.ctx, s.api
	srv := s.cloud.CreateServer(t, "their-node", 240, "m1.small", "az-1")
	theirIP := framework.NodeIP(240)
	portOf := func(serverID string) string {
		pages, err := ports.List(api.neutron, ports.ListOpts{DeviceID: serverID}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ps, _ := ports.ExtractPorts(pages)
		if len(ps) != 1 {
			t.Fatalf("ports of %s: %v", serverID, ps)
		}
		return ps[0].ID
	}
	o := &s.other
	o.serverPort = portOf(srv.ID)
	pairs := []ports.AddressPair{{IPAddress: "198.19.250.0/24", MACAddress: "fa:16:3e:be:ef:01"}}
	if _, err := ports.Update(ctx, api.neutron, o.serverPort, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract(); err != nil {
		t.Fatal(err)
	}
	o.nodePort = portOf(s.nodes[s.nodeName(1)].serverID)
	vrrp := []ports.AddressPair{{IPAddress: operatorVIP, MACAddress: "fa:16:3e:00:00:aa"}}
	if _, err := ports.Update(ctx, api.neutron, o.nodePort, ports.UpdateOpts{AllowedAddressPairs: &vrrp}).Extract(); err != nil {
		t.Fatal(err)
	}
	o.routes = []routers.Route{{DestinationCIDR: "198.19.250.0/24", NextHop: theirIP}, {DestinationCIDR: "198.19.251.0/24", NextHop: framework.NodeIP(241)}}
	rs := o.routes
	if _, err := extraroutes.Add(ctx, api.neutron, s.routerID, extraroutes.Opts{Routes: &rs}).Extract(); err != nil {
		t.Fatal(err)
	}
	sp, err := subnets.List(api.neutron, subnets.ListOpts{Name: "lab-v4"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sn, _ := subnets.ExtractSubnets(sp)
	ref := loadbalancer.ServiceRef{Namespace: "soak", Name: "svc-00"}
	lb, err := loadbalancers.Create(ctx, api.octavia, loadbalancers.CreateOpts{Name: loadbalancer.LoadBalancerName("lab", ref), VipSubnetID: sn[0].ID,
		Tags: loadbalancer.LoadBalancerTags(loadbalancer.Identity{ClusterName: "lab", ClusterUID: "their-cluster-uid"}, ref)}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	o.lbID, o.vipPort = lb.ID, lb.VipPortID
	np, err := networks.List(api.neutron, networks.ListOpts{Name: framework.FloatingNetwork}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := networks.ExtractNetworks(np)
	fip, err := floatingips.Create(ctx, api.neutron, floatingips.CreateOpts{FloatingNetworkID: ns[0].ID, PortID: lb.VipPortID, Description: "their cluster's"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	o.fipID = fip.ID
	s.waitActive(o.lbID) // their load balancer settles
	if s.before, err = o.snapshot(ctx, api, s.routerID, s.real != nil); err != nil {
		t.Fatal(err)
	}
}

func (s *soak) tearDown() {
	s.clearFaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.nodes {
		if n.kubelet != nil {
			n.kubelet.Remove()
		}
	}
	// The control plane outlives the soak: its Nodes must not outlive it
	// (the next test's CCM would delete them, as Nodes of no server).
	for name := range s.nodes {
		_ = s.cp.Admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	}
	if s.stopCCM != nil {
		s.stopCCM()
	}
	if s.stopAppr != nil {
		s.stopAppr()
	}
}

// sample records RSS, heap and the convergence lag every 2 s.
func (s *soak) sample() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			lag, n := s.lag()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			s.mu.Lock()
			s.report.Samples = append(s.report.Samples, Sample{At: s.elapsed(), LagSeconds: lag, Unconverged: n, RSSMiB: rssMiB(), HeapMiB: float64(ms.HeapInuse) / (1 << 20)})
			s.mu.Unlock()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// rssMiB is this process's resident set (VmRSS).
func rssMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
