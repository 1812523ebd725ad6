//go:build e2e

package loadbalancer

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

func createNamespace(ctx context.Context, t *testing.T, cp *framework.ControlPlane, name string) {
	t.Helper()
	cp.CreateNamespace(ctx, t, name)
}

func lbService(ns, name string, ports ...corev1.ServicePort) *corev1.Service {
	return framework.LBService(ns, name, ports...)
}

// waitIngress waits for the Service's status to have an ingress IP.
func waitIngress(ctx context.Context, t *testing.T, cp *framework.ControlPlane, ns, name string, timeout time.Duration) *corev1.Service {
	t.Helper()
	return cp.WaitIngress(ctx, t, ns, name, timeout)
}

func events(ctx context.Context, cp *framework.ControlPlane, ns, name string) string {
	return cp.EventsOf(ctx, ns, name)
}

// waitTree polls the cloud until cond holds.
func waitTree(ctx context.Context, t *testing.T, api *cloudAPI, timeout time.Duration, what string, cond func(st *octaviaState) bool) *octaviaState {
	t.Helper()
	return api.WaitState(ctx, t, timeout, what, cond)
}

func members(ips []string, port int32) []string {
	var out []string
	for _, ip := range ips {
		out = append(out, fmt.Sprintf("%s:%d", ip, port))
	}
	slices.Sort(out)
	return out
}

func (l *lab) nodeIPs() []string {
	var out []string
	for _, ip := range l.ips {
		out = append(out, ip)
	}
	slices.Sort(out)
	return out
}

func TestServiceLoadBalancerLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l := newLab(ctx, t, framework.SimCloudOptions{OctaviaDelay: time.Second}, "", nil, "lb", 20, 3)
	cp, api := l.cp, l.api
	createNamespace(ctx, t, cp, "shop")
	kubeSystem, err := cp.Admin.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fipsBefore, err := api.floatingIPs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	api.sim.ResetCalls()

	svc := lbService("shop", "web",
		corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
		corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(5353)},
	)
	svc.Annotations["loadbalancer.openstack.org/enable-health-monitor"] = "true"
	svc, err = cp.Admin.CoreV1().Services("shop").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const name = "kube_service_lab_shop_web"
	nodePort := func(s *corev1.Service, port int32) int32 {
		for _, p := range s.Spec.Ports {
			if p.Port == port {
				return p.NodePort
			}
		}
		t.Fatalf("no port %d", port)
		return 0
	}

	t.Run("the Service gets one load balancer with exactly the expected tree, and its floating IP as ingress", func(t *testing.T) {
		svc = waitIngress(ctx, t, cp, "shop", "web", 90*time.Second)
		st, err := api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]listenerTree{
			"TCP/80": {PoolProtocol: "TCP", Monitor: "TCP", Members: members(l.nodeIPs(), nodePort(svc, 80))},
			"UDP/53": {PoolProtocol: "UDP", Monitor: "UDP-CONNECT", Members: members(l.nodeIPs(), nodePort(svc, 53))},
		}
		lb, ok := st.LBs[name]
		if st.N != 1 || !ok || !reflect.DeepEqual(lb.Listeners, want) {
			t.Fatalf("Octavia has %d load balancers %+v, want %s with %+v", st.N, st.LBs, name, want)
		}
		if lb.Status != "ACTIVE" || !slices.Contains(lb.Tags, "kube_cluster_uid="+string(kubeSystem.UID)) {
			t.Errorf("load balancer %+v: want ACTIVE and tagged with the kube-system UID %s", lb, kubeSystem.UID)
		}
		if st.Listeners != 2 || st.Pools != 2 || st.Members != 6 || st.Monitors != 2 {
			t.Errorf("objects: %d listeners, %d pools, %d members, %d monitors; want 2, 2, 6, 2", st.Listeners, st.Pools, st.Members, st.Monitors)
		}
		fips, _ := api.floatingIPs(ctx)
		var onVIP []string
		for _, f := range fips {
			if f.PortID == lb.VIPPortID {
				onVIP = append(onVIP, f.FloatingIP)
			}
		}
		if len(onVIP) != 1 || svc.Status.LoadBalancer.Ingress[0].IP != onVIP[0] {
			t.Errorf("ingress %v, floating IPs on the VIP port %v", svc.Status.LoadBalancer.Ingress, onVIP)
		}
		calls := api.sim.Calls()
		t.Logf("Octavia and Neutron calls to create: %v", calls)
		for _, op := range []string{"listeners.create", "pools.create", "members.create", "healthmonitors.create"} {
			if n := calls["load-balancer."+op]; n != 0 {
				t.Errorf("%s called %d times: the create must be one fully populated call", op, n)
			}
		}
		if calls["load-balancer.loadbalancers.create"] != 1 || calls["network.floatingips.create"] != 1 {
			t.Errorf("calls %v: want one load balancer create and one floating IP create", calls)
		}
	})

	t.Run("a new port is one listener create and leaves the rest in place", func(t *testing.T) {
		api.sim.ResetCalls()
		s, err := cp.Admin.CoreV1().Services("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(8443)})
		if svc, err = cp.Admin.CoreV1().Services("shop").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		st := waitTree(ctx, t, api, 60*time.Second, "listener TCP/443", func(st *octaviaState) bool {
			lt, ok := st.LBs[name].Listeners["TCP/443"]
			return ok && len(lt.Members) == 3 && st.LBs[name].Status == "ACTIVE"
		})
		if got := st.LBs[name].Listeners["TCP/443"].Members; !slices.Equal(got, members(l.nodeIPs(), nodePort(svc, 443))) {
			t.Errorf("members %v", got)
		}
		calls := api.sim.Calls()
		if calls["load-balancer.listeners.create"] != 1 || calls["load-balancer.loadbalancers.create"] != 0 || calls["network.floatingips.create"] != 0 {
			t.Errorf("calls %v: want exactly one listener create", calls)
		}
	})

	t.Run("a node joining and a node leaving update every pool's members", func(t *testing.T) {
		l.addNode(ctx, t, "lb-4", 24)
		waitTree(ctx, t, api, 90*time.Second, "members with lb-4", func(st *octaviaState) bool {
			for _, lt := range st.LBs[name].Listeners {
				if !slices.Contains(lt.Members, fmt.Sprintf("%s:%s", l.ips["lb-4"], strings.Split(lt.Members[0], ":")[1])) {
					return false
				}
			}
			return true
		})
		gone := l.ips["lb-1"]
		l.removeNode(ctx, t, "lb-1")
		st := waitTree(ctx, t, api, 90*time.Second, "members without lb-1", func(st *octaviaState) bool {
			for _, lt := range st.LBs[name].Listeners {
				if len(lt.Members) != 3 || slices.ContainsFunc(lt.Members, func(m string) bool { return strings.HasPrefix(m, gone+":") }) {
					return false
				}
			}
			return true
		})
		for key, lt := range st.LBs[name].Listeners {
			port := strings.Split(lt.Members[0], ":")[1]
			var want []string
			for _, ip := range l.nodeIPs() {
				want = append(want, ip+":"+port)
			}
			slices.Sort(want)
			if !slices.Equal(lt.Members, want) {
				t.Errorf("%s members %v, want %v", key, lt.Members, want)
			}
		}
	})

	t.Run("after delete nothing it created remains", func(t *testing.T) {
		if err := cp.Admin.CoreV1().Services("shop").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := cp.Admin.CoreV1().Services("shop").Get(ctx, "web", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatalf("the Service kept its finalizer: %s", events(ctx, cp, "shop", "web"))
		}
		waitTree(ctx, t, api, 30*time.Second, "an empty Octavia", func(st *octaviaState) bool {
			return st.N == 0 && st.Listeners == 0 && st.Pools == 0 && st.Members == 0 && st.Monitors == 0
		})
		vips, err := api.octaviaPorts(ctx)
		if err != nil || len(vips) != 0 {
			t.Errorf("VIP ports left: %v %v", vips, err)
		}
		fips, err := api.floatingIPs(ctx)
		if err != nil || len(fips) != len(fipsBefore) {
			t.Errorf("floating IPs: %d before, %d after (%v)", len(fipsBefore), len(fips), err)
		}
	})
}
