//go:build e2e

// Package loadbalancer tests Services of type LoadBalancer and cloud
// routes end to end: the real control plane, hollow kubelets, stackward-ccm
// in-process as the chart's ServiceAccount, and the simulated Octavia and
// Neutron, whose state the tests read through their HTTP APIs.
package loadbalancer

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
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
	cloud *framework.Cloud
	api   *cloudAPI
	nodes map[string]*framework.Node
	ips   map[string]string // node name -> InternalIP
}

// newLab starts the cloud, the CCM with extra flags and n nodes; the i-th
// node is <prefix>-<i> on framework.NodeIP(base+i).
func newLab(ctx context.Context, t *testing.T, opts framework.CloudOptions, conf string, ccmArgs []string, prefix string, base, n int) *lab {
	t.Helper()
	l := &lab{cp: framework.SharedControlPlane(t), cloud: framework.StartCloud(t, opts), nodes: map[string]*framework.Node{}, ips: map[string]string{}}
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

// cloudAPI reads the simulator's state through the OpenStack APIs.
type cloudAPI struct {
	sim      *cloudsim.Sim
	octavia  *gophercloud.ServiceClient
	neutron  *gophercloud.ServiceClient
	external string
}

func newCloudAPI(ctx context.Context, t *testing.T, c *framework.Cloud) *cloudAPI {
	t.Helper()
	cfg, _, err := config.Load(c.CloudConf(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	clients, err := openstack.NewClients(ctx, cfg, openstack.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oct, err := clients.ServiceClient("load-balancer")
	if err != nil {
		t.Fatal(err)
	}
	oct.ResourceBase = oct.Endpoint + "v2/"
	net, err := clients.ServiceClient("network")
	if err != nil {
		t.Fatal(err)
	}
	net.ResourceBase = net.Endpoint + "v2.0/"
	return &cloudAPI{sim: c.Sim, octavia: oct, neutron: net}
}

func (a *cloudAPI) routerID(ctx context.Context, t *testing.T) string {
	t.Helper()
	pages, err := routers.List(a.neutron, routers.ListOpts{Name: "lab-router"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := routers.ExtractRouters(pages)
	if err != nil || len(rs) != 1 {
		t.Fatalf("lab-router: %v %v", rs, err)
	}
	return rs[0].ID
}

// lbTree is one load balancer as the tests compare it.
type lbTree struct {
	ID, Name, Status, VIPPortID string
	Tags                        []string
	// Listeners by "PROTOCOL/port": the pool protocol, monitor type ("" for
	// none) and sorted members "ip:port".
	Listeners map[string]listenerTree
}

type listenerTree struct {
	PoolProtocol string
	Monitor      string
	Members      []string
	AllowedCIDRs []string
}

// octaviaState is every load balancer and the number of each kind of object.
type octaviaState struct {
	LBs                                    map[string]lbTree // by name
	Listeners, Pools, Members, Monitors, N int
}

func (a *cloudAPI) state(ctx context.Context) (*octaviaState, error) {
	st := &octaviaState{LBs: map[string]lbTree{}}
	pages, err := loadbalancers.List(a.octavia, nil).AllPages(ctx)
	if err != nil {
		return nil, err
	}
	lbs, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		return nil, err
	}
	st.N = len(lbs)
	for _, lb := range lbs {
		tree := lbTree{ID: lb.ID, Name: lb.Name, Status: lb.ProvisioningStatus, VIPPortID: lb.VipPortID, Tags: lb.Tags, Listeners: map[string]listenerTree{}}
		lp, err := listeners.List(a.octavia, listeners.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)
		if err != nil {
			return nil, err
		}
		ls, _ := listeners.ExtractListeners(lp)
		for _, l := range ls {
			lt := listenerTree{AllowedCIDRs: l.AllowedCIDRs}
			if l.DefaultPoolID != "" {
				p, err := pools.Get(ctx, a.octavia, l.DefaultPoolID).Extract()
				if err != nil {
					return nil, err
				}
				lt.PoolProtocol = p.Protocol
				if p.MonitorID != "" {
					m, err := monitors.Get(ctx, a.octavia, p.MonitorID).Extract()
					if err != nil {
						return nil, err
					}
					lt.Monitor = m.Type
				}
				mp, err := pools.ListMembers(a.octavia, p.ID, nil).AllPages(ctx)
				if err != nil {
					return nil, err
				}
				ms, _ := pools.ExtractMembers(mp)
				for _, m := range ms {
					lt.Members = append(lt.Members, m.Address+":"+strconv.Itoa(m.ProtocolPort))
				}
				slices.Sort(lt.Members)
			}
			tree.Listeners[l.Protocol+"/"+strconv.Itoa(l.ProtocolPort)] = lt
		}
		st.LBs[lb.Name] = tree
	}
	for _, count := range []struct {
		n    *int
		list func() (int, error)
	}{
		{&st.Listeners, func() (int, error) {
			p, err := listeners.List(a.octavia, nil).AllPages(ctx)
			if err != nil {
				return 0, err
			}
			x, err := listeners.ExtractListeners(p)
			return len(x), err
		}},
		{&st.Pools, func() (int, error) {
			p, err := pools.List(a.octavia, nil).AllPages(ctx)
			if err != nil {
				return 0, err
			}
			x, err := pools.ExtractPools(p)
			for _, pool := range x {
				st.Members += len(pool.Members)
			}
			return len(x), err
		}},
		{&st.Monitors, func() (int, error) {
			p, err := monitors.List(a.octavia, nil).AllPages(ctx)
			if err != nil {
				return 0, err
			}
			x, err := monitors.ExtractMonitors(p)
			return len(x), err
		}},
	} {
		if *count.n, err = count.list(); err != nil {
			return nil, err
		}
	}
	return st, nil
}

func (a *cloudAPI) floatingIPs(ctx context.Context) ([]floatingips.FloatingIP, error) {
	pages, err := floatingips.List(a.neutron, floatingips.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, err
	}
	return floatingips.ExtractFloatingIPs(pages)
}

// octaviaPorts are the VIP ports Octavia made.
func (a *cloudAPI) octaviaPorts(ctx context.Context) ([]ports.Port, error) {
	pages, err := ports.List(a.neutron, ports.ListOpts{DeviceOwner: "Octavia"}).AllPages(ctx)
	if err != nil {
		return nil, err
	}
	return ports.ExtractPorts(pages)
}

func (a *cloudAPI) routes(ctx context.Context, t *testing.T, routerID string) []routers.Route {
	t.Helper()
	r, err := routers.Get(ctx, a.neutron, routerID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	return r.Routes
}
