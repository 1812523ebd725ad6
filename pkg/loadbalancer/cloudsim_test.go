package loadbalancer_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cloud-provider/api"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/loadbalancer"
	"github.com/stackward/stackward/pkg/openstack"
)

// The real gophercloud adapters against the simulator: the calls per
// Service are counted by the simulator itself.

func simManager(t *testing.T) (*loadbalancer.Manager, *cloudsim.Sim) {
	env := newSimEnv(t, 50*time.Millisecond)
	env.m.Requeue = 50 * time.Millisecond
	return env.m, env.sim
}

// simEnv is a Manager on the real adapters, the simulator behind them, and
// a plain gophercloud Octavia client on it.
type simEnv struct {
	m        *loadbalancer.Manager
	sim      *cloudsim.Sim
	octavia  *gophercloud.ServiceClient
	neutron  *gophercloud.ServiceClient
	subnetID string
	authURL  string
	clients  *openstack.Clients
	net      loadbalancer.Neutron
}

func newSimEnv(t testing.TB, octaviaDelay time.Duration, seed ...func(*cloudsim.Seed)) simEnv {
	t.Helper()
	sd := cloudsim.DefaultSeed()
	sd.Servers = []cloudsim.ServerSpec{
		{Name: "node-1", Flavor: "m1.small", NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: "10.0.0.11"}}},
		{Name: "node-2", Flavor: "m1.small", NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: "10.0.0.12"}}},
	}
	sd.LoadBalancerQuota = 0
	for _, f := range seed {
		f(sd)
	}
	sim, err := cloudsim.New(cloudsim.Options{Seed: sd, RandSeed: 1, OctaviaDelay: octaviaDelay})
	if err != nil {
		t.Fatal(err)
	}
	authURL, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	env := connectSim(t, sim, authURL)
	env.authURL = authURL
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if env.subnetID, err = env.net.SubnetOfAddress(ctx, "10.0.0.11"); err != nil {
		t.Fatal(err)
	}
	return env
}

// simClients are the real clients, as the simulator's user demo, with the
// given HTTP timeout and one retry.
func simClients(t testing.TB, authURL string, timeout time.Duration) *openstack.Clients {
	t.Helper()
	cfg := config.Defaults()
	cfg.Global = config.Global{AuthURL: authURL, Username: "demo", Password: "secret", TenantName: "demo", DomainName: "Default"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	clients, err := openstack.NewClients(ctx, cfg, openstack.ClientOptions{HTTPTimeout: timeout,
		Retry: openstack.RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return clients
}

// connectSim builds the real adapters and a Manager on a started
// simulator, with the raw Octavia and Neutron clients tests read back with.
func connectSim(t testing.TB, sim *cloudsim.Sim, authURL string) simEnv {
	t.Helper()
	clients := simClients(t, authURL, 5*time.Second)
	oct, err := openstack.NewOctavia(clients)
	if err != nil {
		t.Fatal(err)
	}
	net := clients.Neutron
	raw, err := clients.ServiceClient("load-balancer")
	if err != nil {
		t.Fatal(err)
	}
	raw.ResourceBase = raw.Endpoint + "v2/"
	rawNet, err := clients.NeutronClient()
	if err != nil {
		t.Fatal(err)
	}
	m := &loadbalancer.Manager{Octavia: oct, Neutron: net, Config: config.Defaults().LoadBalancer,
		ClusterUID: func(context.Context) (string, error) { return "uid-1", nil }}
	return simEnv{m: m, sim: sim, octavia: raw, neutron: rawNet, net: net, clients: clients}
}

func simNodes(ips ...string) []*corev1.Node {
	var out []*corev1.Node
	for _, ip := range ips {
		out = append(out, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ip},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}})
	}
	return out
}

func ensure(t *testing.T, m *loadbalancer.Manager, svc *corev1.Service, nodes []*corev1.Node) *corev1.LoadBalancerStatus {
	t.Helper()
	ctx := context.Background()
	for range 50 {
		st, err := m.Ensure(ctx, "lab", svc, nodes)
		var re *api.RetryError
		switch {
		case err == nil:
			return st
		case errors.As(err, &re):
			time.Sleep(re.RetryAfter())
		default:
			t.Fatalf("Ensure: %v", err)
		}
	}
	t.Fatal("no convergence")
	return nil
}

func TestAgainstTheSimulator(t *testing.T) {
	m, sim := simManager(t)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{loadbalancer.AnnotationHealthMonitor: "true"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080},
			{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053},
		}},
	}
	sim.ResetCalls()
	st := ensure(t, m, svc, simNodes("10.0.0.11", "10.0.0.12"))
	calls := sim.Calls()
	if len(st.Ingress) != 1 || st.Ingress[0].IP == "" {
		t.Fatalf("status %+v", st)
	}
	t.Logf("create: %v", calls)
	for op, want := range map[string]int{"load-balancer.loadbalancers.create": 1, "network.floatingips.create": 1,
		"load-balancer.listeners.create": 0, "load-balancer.pools.create": 0, "load-balancer.members.create": 0} {
		if calls[op] != want {
			t.Errorf("%s called %d times, want %d", op, calls[op], want)
		}
	}

	t.Run("a node change is one batch member update per pool", func(t *testing.T) {
		sim.ResetCalls()
		ensure(t, m, svc, simNodes("10.0.0.11"))
		calls := sim.Calls()
		if calls["load-balancer.members.batch_update"] != 2 {
			t.Errorf("calls %v", calls)
		}
		for k := range calls {
			if slices.Contains([]string{"create", "update", "delete"}, lastPart(k)) {
				t.Errorf("unexpected write %s", k)
			}
		}
	})

	t.Run("an unchanged Service costs reads only", func(t *testing.T) {
		sim.ResetCalls()
		ensure(t, m, svc, simNodes("10.0.0.11"))
		t.Logf("steady state: %v", sim.Calls())
		for k, n := range sim.Calls() {
			if !slices.Contains([]string{"list", "get", "status"}, lastPart(k)) {
				t.Errorf("write %s x%d", k, n)
			}
		}
	})

	t.Run("delete leaves nothing behind", func(t *testing.T) {
		if err := m.Delete(context.Background(), "lab", svc); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, exists, err := m.Get(context.Background(), "lab", svc)
			if err != nil {
				t.Fatal(err)
			}
			if !exists {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("load balancer still there")
			}
			time.Sleep(20 * time.Millisecond)
		}
		sim.ResetCalls()
	})
}

func lastPart(op string) string {
	for i := len(op) - 1; i >= 0; i-- {
		if op[i] == '.' {
			return op[i+1:]
		}
	}
	return op
}
