//go:build e2e

package loadbalancer

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// Two Services on one load balancer, with manage-security-groups on: the
// load balancer goes with the last Service only, each Service's security
// group opens its NodePorts on the member ports and goes with it, and the
// operator's group on a node port stays byte for byte.
func TestASharedLoadBalancerAndSecurityGroups(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// newLab formats the configuration with the router ID; %.0s drops it.
	l := newLab(ctx, t, framework.SimCloudOptions{OctaviaDelay: 300 * time.Millisecond},
		"%.0s\n[LoadBalancer]\nmanage-security-groups = true\n", nil, "shr", 140, 2)
	cp, api := l.cp, l.api
	createNamespace(ctx, t, cp, "sharing")
	t.Cleanup(func() { dropServices(t, cp, "sharing") })

	nodePort := func(ip string) ports.Port {
		t.Helper()
		pages, err := ports.List(api.neutron, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: ip}}}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		list, err := ports.ExtractPorts(pages)
		if err != nil || len(list) != 1 {
			t.Fatalf("port of %s: %v %v", ip, list, err)
		}
		return list[0]
	}
	rawGroup := func(id string) string {
		t.Helper()
		var body map[string]any
		if err := groups.Get(ctx, api.neutron, id).ExtractInto(&body); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(body)
		return string(b)
	}
	lbGroups := func() map[string]groups.SecGroup {
		t.Helper()
		pages, err := groups.List(api.neutron, groups.ListOpts{}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all, _ := groups.ExtractGroups(pages)
		out := map[string]groups.SecGroup{}
		for _, g := range all {
			if strings.HasPrefix(g.Name, "lb-sg-") {
				out[g.Name] = g
			}
		}
		return out
	}

	// The operator's group on the first node's port, before any Service.
	op, err := groups.Create(ctx, api.neutron, groups.CreateOpts{Name: "operator-ssh", Description: "ssh from the bastion"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rules.Create(ctx, api.neutron, rules.CreateOpts{SecGroupID: op.ID, Direction: rules.DirIngress, EtherType: rules.EtherType4,
		Protocol: rules.ProtocolTCP, PortRangeMin: 22, PortRangeMax: 22, RemoteIPPrefix: "192.0.2.10/32"}).Extract(); err != nil {
		t.Fatal(err)
	}
	p1 := nodePort(l.ips["shr-1"])
	withOp := append(slices.Clone(p1.SecurityGroups), op.ID)
	if _, err := ports.Update(ctx, api.neutron, p1.ID, ports.UpdateOpts{SecurityGroups: &withOp}).Extract(); err != nil {
		t.Fatal(err)
	}
	opBefore := rawGroup(op.ID)
	groupsBefore, nodeIPs := map[string][]string{}, map[string]string{}
	for name, ip := range l.ips {
		groupsBefore[name], nodeIPs[name] = nodePort(ip).SecurityGroups, ip
	}
	fipsBefore, err := api.floatingIPs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sn, err := subnets.Get(ctx, api.neutron, p1.FixedIPs[0].SubnetID).Extract()
	if err != nil {
		t.Fatal(err)
	}

	web := lbService("sharing", "web")
	if _, err = cp.Admin.CoreV1().Services("sharing").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web = waitIngress(ctx, t, cp, "sharing", "web", 90*time.Second)
	const webLB = "kube_service_lab_sharing_web"
	st, err := api.state(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lbID := st.LBs[webLB].ID

	t.Run("the Service's security group opens its NodePort on every member port, next to the operator's", func(t *testing.T) {
		name := loadbalancer.SecurityGroupName(web)
		var g groups.SecGroup
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			var ok bool
			g, ok = lbGroups()[name]
			if !ok {
				return false, nil
			}
			for _, ip := range l.ips {
				if !slices.Contains(nodePort(ip).SecurityGroups, g.ID) {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("group %s on the member ports: %v; groups %v; events: %s", name, err, lbGroups(), events(ctx, cp, "sharing", "web"))
		}
		var opened []string
		for _, r := range g.Rules {
			if r.Direction == "ingress" {
				opened = append(opened, r.Protocol+" "+strconv.Itoa(r.PortRangeMin)+"-"+strconv.Itoa(r.PortRangeMax)+" "+r.RemoteIPPrefix)
			}
		}
		np := strconv.Itoa(int(web.Spec.Ports[0].NodePort))
		if want := []string{"tcp " + np + "-" + np + " " + sn.CIDR}; !slices.Equal(opened, want) {
			t.Errorf("ingress rules %v, want %v", opened, want)
		}
		if got := nodePort(l.ips["shr-1"]).SecurityGroups; !slices.Equal(got, append(slices.Clone(withOp), g.ID)) {
			t.Errorf("shr-1 port groups %v, want the operator's kept and ours added", got)
		}
	})

	deleteService := func(t *testing.T, name string) {
		t.Helper()
		if err := cp.Admin.CoreV1().Services("sharing").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := cp.Admin.CoreV1().Services("sharing").Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatalf("Service %s kept its finalizer: %s", name, events(ctx, cp, "sharing", name))
		}
	}

	api2 := lbService("sharing", "api", corev1.ServicePort{Name: "api", Protocol: corev1.ProtocolTCP, Port: 8080, TargetPort: intstr.FromInt32(8080)})
	api2.Annotations[loadbalancer.AnnotationLoadBalancerID] = lbID
	if _, err := cp.Admin.CoreV1().Services("sharing").Create(ctx, api2, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("a second Service shares the load balancer and its address", func(t *testing.T) {
		got := waitIngress(ctx, t, cp, "sharing", "api", 90*time.Second)
		if got.Status.LoadBalancer.Ingress[0].IP != web.Status.LoadBalancer.Ingress[0].IP {
			t.Errorf("ingress %v, want the shared %v", got.Status.LoadBalancer.Ingress, web.Status.LoadBalancer.Ingress)
		}
		st := waitTree(ctx, t, api, 60*time.Second, "two listeners on one load balancer", func(st *octaviaState) bool {
			lb := st.LBs[webLB]
			return st.N == 1 && len(lb.Listeners) == 2 && len(lb.Listeners["TCP/8080"].Members) == 2
		})
		lb := st.LBs[webLB]
		for _, tag := range []string{"kube_service_lab_sharing_web", "kube_service_lab_sharing_api"} {
			if !slices.Contains(lb.Tags, tag) {
				t.Errorf("tags %v lack %s", lb.Tags, tag)
			}
		}
	})

	t.Run("a third Service is refused with an Event naming max-shared-lb, and nothing changes", func(t *testing.T) {
		before, err := api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		third := lbService("sharing", "third", corev1.ServicePort{Name: "t", Protocol: corev1.ProtocolTCP, Port: 9090, TargetPort: intstr.FromInt32(9090)})
		third.Annotations[loadbalancer.AnnotationLoadBalancerID] = lbID
		if _, err := cp.Admin.CoreV1().Services("sharing").Create(ctx, third, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			return strings.Contains(events(ctx, cp, "sharing", "third"), "max-shared-lb"), nil
		})
		if err != nil {
			t.Fatalf("no Event naming max-shared-lb: %s", events(ctx, cp, "sharing", "third"))
		}
		after, err := api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(after.LBs[webLB].Tags, before.LBs[webLB].Tags) || after.Listeners != before.Listeners {
			t.Errorf("the refused Service changed the load balancer: %+v -> %+v", before.LBs[webLB], after.LBs[webLB])
		}
		deleteService(t, "third")
	})

	t.Run("a node leaving loses both Services' groups on its port, the others' stay", func(t *testing.T) {
		ip := l.ips["shr-2"]
		l.removeNode(ctx, t, "shr-2")
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
			return slices.Equal(nodePort(ip).SecurityGroups, groupsBefore["shr-2"]), nil
		})
		if err != nil {
			t.Fatalf("shr-2 port groups %v, want %v as before", nodePort(ip).SecurityGroups, groupsBefore["shr-2"])
		}
		got := nodePort(l.ips["shr-1"]).SecurityGroups
		if len(got) != len(withOp)+2 || !slices.Equal(got[:len(withOp)], withOp) {
			t.Errorf("shr-1 port groups %v, want the operator's and both Services'", got)
		}
	})

	t.Run("deleting the creator keeps the load balancer for the other Service", func(t *testing.T) {
		deleteService(t, "web")
		st, err := api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lb, ok := st.LBs[webLB]
		if st.N != 1 || !ok || len(lb.Listeners) != 1 || len(lb.Listeners["TCP/8080"].Members) != 1 {
			t.Fatalf("Octavia %+v: want the load balancer with the other Service's listener only", st.LBs)
		}
		if _, ok := lbGroups()[loadbalancer.SecurityGroupName(web)]; ok {
			t.Errorf("the deleted Service's security group remains")
		}
		got, err := cp.Admin.CoreV1().Services("sharing").Get(ctx, "api", metav1.GetOptions{})
		if err != nil || len(got.Status.LoadBalancer.Ingress) == 0 || got.Status.LoadBalancer.Ingress[0].IP != web.Status.LoadBalancer.Ingress[0].IP {
			t.Errorf("the remaining Service's ingress: %v %v", got.Status.LoadBalancer.Ingress, err)
		}
	})

	t.Run("deleting the last Service leaves nothing, the operator's group byte for byte", func(t *testing.T) {
		deleteService(t, "api")
		waitTree(ctx, t, api, 30*time.Second, "an empty Octavia", func(st *octaviaState) bool {
			return st.N == 0 && st.Listeners == 0 && st.Pools == 0 && st.Members == 0 && st.Monitors == 0
		})
		if vips, err := api.octaviaPorts(ctx); err != nil || len(vips) != 0 {
			t.Errorf("VIP ports left: %v %v", vips, err)
		}
		if fips, err := api.floatingIPs(ctx); err != nil || len(fips) != len(fipsBefore) {
			t.Errorf("floating IPs: %d before, %d after (%v)", len(fipsBefore), len(fips), err)
		}
		if left := lbGroups(); len(left) != 0 {
			t.Errorf("security groups left: %v", left)
		}
		for name, ip := range nodeIPs {
			if got := nodePort(ip).SecurityGroups; !slices.Equal(got, groupsBefore[name]) {
				t.Errorf("%s port groups %v, want %v as before", name, got, groupsBefore[name])
			}
		}
		if after := rawGroup(op.ID); after != opBefore {
			t.Errorf("the operator's group changed:\n%s\n%s", opBefore, after)
		}
	})
}
