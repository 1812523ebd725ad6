//go:build e2e

package loadbalancer

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/internal/cloudsim"
)

// Recreation of a load balancer in ERROR, node-selector and the ingress
// hostname, with the real service controller; the cloud is read back
// through the Octavia and Neutron APIs.
func TestServiceLoadBalancerRecoveryAndSelection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conf := "# router %s unused\n[LoadBalancer]\nenable-ingress-hostname = true\n[LoadBalancerClass \"edge\"]\nfloating-subnet = \"public-*\"\n"
	l := newLab(ctx, t, framework.SimCloudOptions{OctaviaDelay: 500 * time.Millisecond}, conf, nil, "more", 170, 2)
	cp, api := l.cp, l.api
	createNamespace(ctx, t, cp, "more")
	t.Cleanup(func() { dropServices(t, cp, "more") })

	t.Run("a load balancer Octavia leaves in ERROR is recreated with the same floating IP", func(t *testing.T) {
		const name = "kube_service_lab_more_phoenix"
		if err := api.sim.SetFault(cloudsim.FaultRule{Service: cloudsim.ServiceLoadBalancer, Operation: "provisioning", Times: 1}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(api.sim.ClearFaults)
		api.sim.ResetCalls()
		if _, err := cp.Admin.CoreV1().Services("more").Create(ctx, lbService("more", "phoenix"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The one Octavia will fail, and its floating IP: the CCM replaces
		// it as soon as it sees it in ERROR, so it is read before that.
		broken := waitTree(ctx, t, api, 60*time.Second, name+" created", func(st *octaviaState) bool {
			return st.LBs[name].ID != ""
		}).LBs[name]
		var fipsBefore []string
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			all, err := api.floatingIPs(ctx)
			fipsBefore = nil
			for _, f := range all {
				fipsBefore = append(fipsBefore, f.FloatingIP)
			}
			return err == nil && len(fipsBefore) == 1, nil
		}); err != nil {
			t.Fatalf("floating IPs in the project: %v, want the broken one's", fipsBefore)
		}

		svc := waitIngress(ctx, t, cp, "more", "phoenix", 90*time.Second)
		if got := svc.Status.LoadBalancer.Ingress[0].IP; got != fipsBefore[0] {
			t.Errorf("ingress %s, want the floating IP %s of the broken load balancer", got, fipsBefore[0])
		}
		st := waitTree(ctx, t, api, 60*time.Second, "the broken one gone", func(st *octaviaState) bool {
			lb, ok := st.LBs[name]
			return ok && lb.ID != broken.ID && lb.Status == "ACTIVE" && st.N == 1
		})
		fresh := st.LBs[name]
		if got := fipsOnPort(ctx, t, api, fresh.VIPPortID); len(got) != 1 || got[0] != fipsBefore[0] {
			t.Errorf("floating IPs on the new VIP port %v, want %s", got, fipsBefore[0])
		}
		all, err := api.floatingIPs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 1 {
			t.Errorf("%d floating IPs in the project, want the one kept", len(all))
		}
		if lt := fresh.Listeners["TCP/80"]; len(lt.Members) != 2 {
			t.Errorf("listener %+v, want both nodes as members", lt)
		}
		calls := api.sim.Calls()
		t.Logf("calls from the Service's creation to its recreated load balancer: %v", calls)
		if calls["load-balancer.loadbalancers.create"] != 2 || calls["load-balancer.loadbalancers.delete"] != 1 || calls["network.floatingips.create"] != 1 {
			t.Errorf("calls %v: want two load balancer creates (the first, the replacement), one delete, one floating IP", calls)
		}
		if e := events(ctx, cp, "more", "phoenix"); !strings.Contains(e, "provisioning status ERROR: recreated it as") || !strings.Contains(e, fipsBefore[0]) {
			t.Errorf("no Event saying it was recreated keeping %s: %s", fipsBefore[0], e)
		}
	})

	t.Run("node-selector makes only the matching nodes members", func(t *testing.T) {
		const name = "kube_service_lab_more_picky"
		chosen := "more-2"
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{"pool": "ingress"}}})
		if _, err := cp.Admin.CoreV1().Nodes().Patch(ctx, chosen, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		svc := lbService("more", "picky")
		svc.Annotations["loadbalancer.openstack.org/node-selector"] = "pool=ingress"
		if _, err := cp.Admin.CoreV1().Services("more").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		svc = waitIngress(ctx, t, cp, "more", "picky", 90*time.Second)
		st, err := api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := members([]string{l.ips[chosen]}, svc.Spec.Ports[0].NodePort)
		if got := st.LBs[name].Listeners["TCP/80"].Members; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("members %v, want only %s's %v", got, chosen, want)
		}
	})

	t.Run("PROXY protocol publishes <ip>.nip.io, the hostname annotation itself, and the address is on the Service", func(t *testing.T) {
		proxy := lbService("more", "proxied")
		proxy.Annotations["loadbalancer.openstack.org/proxy-protocol"] = "true"
		named := lbService("more", "named")
		named.Annotations["loadbalancer.openstack.org/hostname"] = "shop.example.com"
		for _, s := range []*corev1.Service{proxy, named} {
			if _, err := cp.Admin.CoreV1().Services("more").Create(ctx, s, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct{ svc, lb, hostname string }{
			{"proxied", "kube_service_lab_more_proxied", "%s.nip.io"},
			{"named", "kube_service_lab_more_named", "shop.example.com"},
		} {
			svc := waitHostname(ctx, t, cp, "more", tc.svc, 90*time.Second)
			st, err := api.state(ctx)
			if err != nil {
				t.Fatal(err)
			}
			fips := fipsOnPort(ctx, t, api, st.LBs[tc.lb].VIPPortID)
			if len(fips) != 1 {
				t.Fatalf("%s: floating IPs %v", tc.svc, fips)
			}
			want := strings.Replace(tc.hostname, "%s", fips[0], 1)
			if in := svc.Status.LoadBalancer.Ingress; len(in) != 1 || in[0].Hostname != want || in[0].IP != "" {
				t.Errorf("%s: ingress %+v, want only the hostname %s", tc.svc, in, want)
			}
			if got := svc.Annotations["loadbalancer.openstack.org/load-balancer-address"]; got != fips[0] {
				t.Errorf("%s: load-balancer-address %q, want the floating IP %s", tc.svc, got, fips[0])
			}
		}
	})

	t.Run("port-id makes a port of the user's the VIP, which outlives the load balancer", func(t *testing.T) {
		pages, err := networks.List(api.neutron, networks.ListOpts{Name: framework.LabNetwork}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		nets, err := networks.ExtractNetworks(pages)
		if err != nil || len(nets) != 1 {
			t.Fatalf("network %s: %v %v", framework.LabNetwork, nets, err)
		}
		port, err := ports.Create(ctx, api.neutron, ports.CreateOpts{NetworkID: nets[0].ID, Name: "reserved-vip"}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		svc := lbService("more", "onport")
		svc.Annotations["loadbalancer.openstack.org/port-id"] = port.ID
		if _, err := cp.Admin.CoreV1().Services("more").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := waitIngress(ctx, t, cp, "more", "onport", 90*time.Second)
		st, err := api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if lb := st.LBs["kube_service_lab_more_onport"]; lb.VIPPortID != port.ID {
			t.Errorf("VIP port %s, want the user's %s", lb.VIPPortID, port.ID)
		}
		if fips := fipsOnPort(ctx, t, api, port.ID); len(fips) != 1 || fips[0] != got.Status.LoadBalancer.Ingress[0].IP {
			t.Errorf("floating IPs on the port %v, ingress %v", fips, got.Status.LoadBalancer.Ingress)
		}
		if err := cp.Admin.CoreV1().Services("more").Delete(ctx, "onport", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitTree(ctx, t, api, 60*time.Second, "onport deleted", func(st *octaviaState) bool {
			_, ok := st.LBs["kube_service_lab_more_onport"]
			return !ok
		})
		if _, err := ports.Get(ctx, api.neutron, port.ID).Extract(); err != nil {
			t.Errorf("the user's port went with the load balancer: %v", err)
		}
	})

	t.Run("a class picks the floating subnet by name pattern", func(t *testing.T) {
		svc := lbService("more", "edge")
		svc.Annotations["loadbalancer.openstack.org/class"] = "edge"
		api.sim.ResetCalls()
		if _, err := cp.Admin.CoreV1().Services("more").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := waitIngress(ctx, t, cp, "more", "edge", 90*time.Second)
		ip, err := netip.ParseAddr(got.Status.LoadBalancer.Ingress[0].IP)
		if err != nil || !netip.MustParsePrefix("203.0.113.0/24").Contains(ip) {
			t.Errorf("ingress %v, want a floating IP of public-v4", got.Status.LoadBalancer.Ingress)
		}
		if n := api.sim.Calls()["network.subnets.list"]; n != 1 {
			t.Errorf("%d subnet lists, want one (when the floating IP is allocated)", n)
		}
	})

	t.Run("an unknown class is an Event naming it, and nothing is created", func(t *testing.T) {
		svc := lbService("more", "classless")
		svc.Annotations["loadbalancer.openstack.org/class"] = "nosuch"
		if _, err := cp.Admin.CoreV1().Services("more").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			e := events(ctx, cp, "more", "classless")
			return strings.Contains(e, "loadbalancer.openstack.org/class") && strings.Contains(e, "nosuch"), nil
		})
		if err != nil {
			t.Errorf("no Event naming the class: %s", events(ctx, cp, "more", "classless"))
		}
		st, err := api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := st.LBs["kube_service_lab_more_classless"]; ok {
			t.Error("a load balancer was created for an unknown class")
		}
	})
}

func fipsOnPort(ctx context.Context, t *testing.T, api *cloudAPI, portID string) []string {
	t.Helper()
	all, err := api.floatingIPs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range all {
		if f.PortID == portID {
			out = append(out, f.FloatingIP)
		}
	}
	return out
}

// waitHostname waits for an ingress hostname and the recorded address.
func waitHostname(ctx context.Context, t *testing.T, cp *framework.ControlPlane, ns, name string, timeout time.Duration) *corev1.Service {
	t.Helper()
	var svc *corev1.Service
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		s, err := cp.Admin.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		svc = s
		return len(s.Status.LoadBalancer.Ingress) > 0 && s.Status.LoadBalancer.Ingress[0].Hostname != "" &&
			s.Annotations["loadbalancer.openstack.org/load-balancer-address"] != "", nil
	})
	if err != nil {
		t.Fatalf("service %s/%s got no ingress hostname: %v; events: %s", ns, name, err, events(ctx, cp, ns, name))
	}
	return svc
}
