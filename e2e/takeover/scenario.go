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
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

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
//
// Each phase is a method of scenario, in this order; a phase that cannot
// go on fails the test, the checks after the switch are subtests.
func Run(t *testing.T, cp *framework.ControlPlane, cloud framework.TestCloud, rbac framework.UpstreamRBAC, firstNode int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	s := newScenario(ctx, t, cp, cloud, rbac)
	s.upstreamInitializesNodes(ctx, t, firstNode)
	s.upstreamMakesLoadBalancers(ctx, t)
	s.upstreamRoutesPodCIDRs(ctx, t)
	s.recordWhatUpstreamMade(ctx, t)
	s.switchToStackward(ctx, t)
	s.stackwardAdoptsEverything(ctx, t)
	s.checkTheSwitchKeptEverything(ctx, t)
	s.checkAChangeLandsOnTheAdoptedLoadBalancer(ctx, t)
	s.checkRoutesFollowNodes(ctx, t)
	s.deleteEachService(ctx, t)
	s.checkWhatIsLeft(ctx, t)
	s.logTable(t)
}

// scenario is one run of the takeover: its setting, and what each phase
// recorded for the next.
type scenario struct {
	cp        *framework.ControlPlane
	cloud     framework.TestCloud
	rbac      framework.UpstreamRBAC
	ns        string
	api       *cloudAPI
	routerID  string
	conf      string   // the cloud.conf both CCMs run with
	routeArgs []string // the route controller's flags, the same for both

	upstream *framework.Process
	nodes    map[string]*framework.Node
	nodeIPs  map[string]string
	// before are the Nodes as upstream initialized them.
	before map[string]*corev1.Node
	// reserved is the operator's floating IP the pinned Service names.
	reserved   *floatingips.FloatingIP
	state      map[string]*caseState
	wantRoutes []string
	// upSnap, after and final are the cloud before the switch, after it
	// and after every Service was deleted.
	upSnap, after, final *snapshot
	// switched is when Stackward started (Events carry whole seconds).
	switched metav1.Time
}

func newScenario(ctx context.Context, t *testing.T, cp *framework.ControlPlane, cloud framework.TestCloud, rbac framework.UpstreamRBAC) *scenario {
	s := &scenario{cp: cp, cloud: cloud, rbac: rbac, ns: "legacy-" + cloud.Name(), api: newCloudAPI(ctx, t, cloud),
		nodes: map[string]*framework.Node{}, nodeIPs: map[string]string{}, before: map[string]*corev1.Node{}, state: map[string]*caseState{}}
	s.routerID = s.api.RouterID(ctx, t, "lab-router")
	// Upstream's security groups and health monitors are on, as in most
	// production clusters: Stackward must keep both.
	//
	// On the real lane upstream makes its load balancers one call at a
	// time (its provider-requires-serial-api-calls, which Stackward warns
	// about and ignores): the loaded lab's Octavia strands most fully
	// populated creates (docs/reference/load-balancers.md, "A stuck load
	// balancer"), upstream publishes those though they never serve, and the
	// takeover must start from load balancers that do. On cloudsim upstream
	// keeps its fully populated create.
	serial := ""
	if cloud.Name() == "openstack" {
		serial = "provider-requires-serial-api-calls = true\n"
	}
	s.conf = cloud.CloudConf(t, fmt.Sprintf("[LoadBalancer]\nmanage-security-groups = true\ncreate-monitor = true\n%s\n[Route]\nrouter-id = %s\n", serial, s.routerID))
	s.routeArgs = []string{"--allocate-node-cidrs", "--configure-cloud-routes", "--cluster-cidr=" + clusterCIDR, "--route-reconciliation-period=2s"}
	return s
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
