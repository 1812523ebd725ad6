//go:build e2e

// Package loadbalancer tests Services of type LoadBalancer and cloud
// routes end to end: the real control plane, hollow kubelets, stackward-ccm
// in-process as the chart's ServiceAccount, and the simulated Octavia and
// Neutron, whose state the tests read through their HTTP APIs.
package loadbalancer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/internal/cloudsim"
)

func TestMain(m *testing.M) { framework.Main(m) }

const uninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"

// startCCM runs stackward-ccm in-process as the chart's ServiceAccount
// until the test ends or stop is called.
func startCCM(ctx context.Context, t *testing.T, cp *framework.ControlPlane, cloudConf string, extra ...string) (stop func()) {
	t.Helper()
	stop, err := cp.RunCCM(ctx, cloudConf, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return stop
}

// lab is a cloud with servers whose hollow kubelets have joined and been
// initialized by the CCM.
type lab struct {
	cp    *framework.ControlPlane
	conf  string   // the cloud.conf the CCM reads
	args  []string // its extra flags
	stop  func()   // stops the CCM
	cloud *framework.SimCloud
	api   *cloudAPI
	nodes map[string]*framework.Node
	ips   map[string]string // node name -> InternalIP
}

// newLab starts the cloud, the CCM with extra flags and n nodes; the i-th
// node is <prefix>-<i> on framework.NodeIP(base+i).
func newLab(ctx context.Context, t *testing.T, opts framework.SimCloudOptions, conf string, ccmArgs []string, prefix string, base, n int) *lab {
	t.Helper()
	l := &lab{cp: framework.SharedControlPlane(t), cloud: framework.StartSimCloud(t, opts), nodes: map[string]*framework.Node{}, ips: map[string]string{}}
	l.api = newCloudAPI(ctx, t, l.cloud)
	if conf != "" {
		conf = fmt.Sprintf(conf, l.api.routerID(ctx, t))
	}
	l.conf, l.args = l.cloud.CloudConf(t, conf), ccmArgs
	l.stop = startCCM(ctx, t, l.cp, l.conf, l.args...)
	for i := 1; i <= n; i++ {
		l.addNode(ctx, t, fmt.Sprintf("%s-%d", prefix, i), base+i)
	}
	return l
}

func (l *lab) addNode(ctx context.Context, t *testing.T, name string, i int) {
	t.Helper()
	l.cloud.CreateServer(t, name, i, "m1.small", "az-1")
	ip := framework.NodeIP(i)
	// Registered before the kubelet's own cleanup, so it runs after the
	// kubelet stopped: the next test on the shared control plane must not
	// see this node (the service controller would make it a member).
	t.Cleanup(func() {
		_ = l.cp.Admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	l.nodes[name] = l.cp.StartNode(t, framework.NodeOptions{Name: name, IP: ip})
	l.ips[name] = ip
	if _, err := l.cp.WaitForNode(ctx, name, 90*time.Second, func(n *corev1.Node) bool {
		return n.Spec.ProviderID != "" && !framework.HasTaint(n, uninitializedTaint) && len(n.Status.Addresses) > 0
	}); err != nil {
		t.Fatalf("node %s not initialized: %v", name, err)
	}
}

// removeNode stops a node's kubelet and deletes its Node, as a scale-down.
func (l *lab) removeNode(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	l.nodes[name].Stop()
	if err := l.cp.Admin.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	delete(l.ips, name)
}

// cloudAPI reads the simulator's state through the OpenStack APIs
// (framework.CloudAPI), and keeps the simulator for fault injection.
type cloudAPI struct {
	*framework.CloudAPI
	sim              *cloudsim.Sim
	octavia, neutron *gophercloud.ServiceClient
}

type (
	listenerTree = framework.ListenerTree
	octaviaState = framework.OctaviaState
)

func newCloudAPI(ctx context.Context, t *testing.T, c *framework.SimCloud) *cloudAPI {
	t.Helper()
	api := framework.NewCloudAPI(ctx, t, c.CloudConf(t, ""))
	return &cloudAPI{CloudAPI: api, sim: c.Sim, octavia: api.Octavia, neutron: api.Neutron}
}

func (a *cloudAPI) routerID(ctx context.Context, t *testing.T) string {
	t.Helper()
	return a.RouterID(ctx, t, "lab-router")
}

func (a *cloudAPI) state(ctx context.Context) (*octaviaState, error) { return a.State(ctx) }

func (a *cloudAPI) floatingIPs(ctx context.Context) ([]floatingips.FloatingIP, error) {
	return a.FloatingIPs(ctx)
}

// octaviaPorts are the VIP ports Octavia made.
func (a *cloudAPI) octaviaPorts(ctx context.Context) ([]ports.Port, error) {
	return a.Ports(ctx, ports.ListOpts{DeviceOwner: "Octavia"})
}

func (a *cloudAPI) routes(ctx context.Context, t *testing.T, routerID string) []routers.Route {
	t.Helper()
	return a.Routes(ctx, t, routerID)
}
