package loadbalancer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// simServerNodes are nodes with these InternalIPs whose providerIDs name
// the simulator's servers holding them, as the CCM sets them.
func simServerNodes(t *testing.T, sim *cloudsim.Sim, ips ...string) []*corev1.Node {
	t.Helper()
	out := simNodes(ips...)
	for i, ip := range ips {
		for _, sv := range sim.Servers() {
			if slices.ContainsFunc(sv.Addresses, func(a cloudsim.Address) bool { return a.IP == ip }) {
				out[i].Spec.ProviderID = "openstack:///" + sv.ID
			}
		}
		if out[i].Spec.ProviderID == "" {
			t.Fatalf("no server holds %s", ip)
		}
	}
	return out
}

// The security group of a Service through the real adapter, against the
// simulator's Neutron: an operator's group on the same port survives byte
// for byte, and nothing is left after the Service is deleted.
func TestSecurityGroupsAgainstTheSimulator(t *testing.T) {
	env := newSimEnv(t, 20*time.Millisecond)
	env.m.Requeue = 20 * time.Millisecond
	env.m.Config.ManageSecurityGroups = true
	sgs := env.clients.Neutron
	env.m.SecurityGroups = sgs
	nc, err := env.clients.NeutronClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	portOf := func(ip string) ports.Port {
		t.Helper()
		pages, err := ports.List(nc, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: ip}}}).AllPages(ctx)
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
		if err := groups.Get(ctx, nc, id).ExtractInto(&body); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(body)
		return string(b)
	}

	// The operator's own group on node-1's port, before the Service.
	op, err := groups.Create(ctx, nc, groups.CreateOpts{Name: "operator-ssh", Description: "ssh from the bastion"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rules.Create(ctx, nc, rules.CreateOpts{SecGroupID: op.ID, Direction: rules.DirIngress, EtherType: rules.EtherType4,
		Protocol: rules.ProtocolTCP, PortRangeMin: 22, PortRangeMax: 22, RemoteIPPrefix: "192.0.2.10/32"}).Extract(); err != nil {
		t.Fatal(err)
	}
	p1 := portOf("10.0.0.11")
	withOp := append(slices.Clone(p1.SecurityGroups), op.ID)
	if _, err := ports.Update(ctx, nc, p1.ID, ports.UpdateOpts{SecurityGroups: &withOp}).Extract(); err != nil {
		t.Fatal(err)
	}
	opBefore := rawGroup(op.ID)
	p2Before := portOf("10.0.0.12").SecurityGroups

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "0d5c2f64-1111-4222-8333-944455556666"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080},
			{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053},
		}},
	}
	ensure(t, env.m, svc, simServerNodes(t, env.sim, "10.0.0.11", "10.0.0.12"))

	found, err := sgs.FindGroups(ctx, "lb-sg-0d5c2f64-1111-4222-8333-944455556666-shop-web")
	if err != nil || len(found) != 1 {
		t.Fatalf("the Service's group: %v %v", found, err)
	}
	ours := found[0]
	if !slices.Equal(ours.Tags, []string{"kube_cluster_uid=uid-1"}) {
		t.Errorf("the Service's group has tags %v, want this cluster's UID tag", ours.Tags)
	}
	cidr, err := sgs.SubnetCIDR(ctx, env.subnetID)
	if err != nil {
		t.Fatal(err)
	}
	var opened []string
	for _, r := range ours.Rules {
		if r.Direction == "ingress" {
			opened = append(opened, fmt.Sprintf("%s %s %d-%d %s", r.Ethertype, r.Protocol, r.PortMin, r.PortMax, r.RemoteIPPrefix))
		}
	}
	slices.Sort(opened)
	if want := []string{"IPv4 tcp 30080-30080 " + cidr, "IPv4 udp 30053-30053 " + cidr}; !slices.Equal(opened, want) {
		t.Errorf("ingress rules %v, want %v", opened, want)
	}
	if got := portOf("10.0.0.11").SecurityGroups; !slices.Equal(got, append(slices.Clone(withOp), ours.ID)) {
		t.Errorf("node-1 port groups %v, want the operator's kept and ours added", got)
	}
	if got := portOf("10.0.0.12").SecurityGroups; !slices.Contains(got, ours.ID) {
		t.Errorf("node-2 port groups %v, want ours", got)
	}

	t.Run("Neutron refuses to delete a group in use (409)", func(t *testing.T) {
		if err := groups.Delete(ctx, nc, ours.ID).ExtractErr(); !gophercloud.ResponseCodeIs(err, 409) {
			t.Errorf("delete of a group on ports: %v, want 409", err)
		}
	})

	t.Run("a stale revision is refused with 412 and reported as a changed port", func(t *testing.T) {
		p := portOf("10.0.0.12")
		err := sgs.SetPortGroups(ctx, p.ID, []string{}, p.RevisionNumber-1)
		if !errors.Is(err, loadbalancer.ErrPortChanged) {
			t.Errorf("stale update: %v, want ErrPortChanged", err)
		}
		if got := portOf("10.0.0.12").SecurityGroups; !slices.Equal(got, p.SecurityGroups) {
			t.Errorf("a refused update changed the port: %v", got)
		}
	})

	t.Run("a steady state costs one group list and one port list", func(t *testing.T) {
		env.sim.ResetCalls()
		ensure(t, env.m, svc, simServerNodes(t, env.sim, "10.0.0.11", "10.0.0.12"))
		calls := env.sim.Calls()
		if calls["network.security-groups.list"] != 1 || calls["network.ports.list"] != 1 {
			t.Errorf("calls %v", calls)
		}
		for k := range calls {
			if last := lastPart(k); last != "list" && last != "get" && last != "status" {
				t.Errorf("write %s in a steady state", k)
			}
		}
	})

	t.Run("a node leaving loses our group", func(t *testing.T) {
		ensure(t, env.m, svc, simServerNodes(t, env.sim, "10.0.0.11"))
		if got := portOf("10.0.0.12").SecurityGroups; !slices.Equal(got, p2Before) {
			t.Errorf("node-2 port groups %v, want %v", got, p2Before)
		}
	})

	t.Run("delete leaves nothing, the operator's group byte for byte", func(t *testing.T) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := env.m.Delete(ctx, "lab", svc)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("delete: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if left, err := sgs.FindGroups(ctx, ours.Name); err != nil || len(left) != 0 {
			t.Errorf("groups left %v %v", left, err)
		}
		if got := portOf("10.0.0.11").SecurityGroups; !slices.Equal(got, withOp) {
			t.Errorf("node-1 port groups %v, want %v", got, withOp)
		}
		if after := rawGroup(op.ID); after != opBefore {
			t.Errorf("operator group changed:\n%s\n%s", opBefore, after)
		}
	})

	t.Run("a group the upstream CCM made for a Service is tagged as this cluster's on the first sync and deleted with the Service", func(t *testing.T) {
		svc2 := svc.DeepCopy()
		svc2.Name, svc2.UID = "api", "7e6d5c4b-2222-4333-8444-955566667777"
		name := "lb-sg-7e6d5c4b-2222-4333-8444-955566667777-shop-api"
		up, err := groups.Create(ctx, nc, groups.CreateOpts{Name: name, Description: "Security Group for shop/api Service LoadBalancer in cluster lab"}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		ensure(t, env.m, svc2, simServerNodes(t, env.sim, "10.0.0.11"))
		got, err := groups.Get(ctx, nc, up.ID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Tags, []string{"kube_cluster_uid=uid-1"}) {
			t.Errorf("upstream's group has tags %v, want this cluster's", got.Tags)
		}
		if found, _ := sgs.FindGroups(ctx, name); len(found) != 1 {
			t.Errorf("%d groups of the name, want upstream's only", len(found))
		}
		if !slices.Contains(portOf("10.0.0.11").SecurityGroups, up.ID) {
			t.Error("upstream's group is not on the member's port")
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := env.m.Delete(ctx, "lab", svc2)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("delete: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if left, err := sgs.FindGroups(ctx, name); err != nil || len(left) != 0 {
			t.Errorf("upstream's group left after the delete: %v %v", left, err)
		}
	})
}
