package loadbalancer_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/internal/cloudsim"
)

// A node's kubelet credential can patch its status addresses. A node that
// lists an operator VM's address as its InternalIP must not get the
// Service's group and NodePort rules put on that VM's port.
func TestANodeListingAnOperatorVMsAddressDoesNotOpenThatVMsPort(t *testing.T) {
	env := newSimEnv(t, 20*time.Millisecond, func(sd *cloudsim.Seed) {
		sd.Servers = append(sd.Servers, cloudsim.ServerSpec{Name: "bastion", Flavor: "m1.small",
			NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: "10.0.0.30"}}})
	})
	env.m.Requeue = 20 * time.Millisecond
	env.m.Config.ManageSecurityGroups = true
	env.m.SecurityGroups = env.clients.Neutron
	ctx := context.Background()
	portOf := func(ip string) ports.Port {
		t.Helper()
		pages, err := ports.List(env.neutron, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: ip}}}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		list, err := ports.ExtractPorts(pages)
		if err != nil || len(list) != 1 {
			t.Fatalf("port of %s: %v %v", ip, list, err)
		}
		return list[0]
	}

	// The operator's own group on the bastion's port.
	op, err := groups.Create(ctx, env.neutron, groups.CreateOpts{Name: "bastion-ssh"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	bastion := portOf("10.0.0.30")
	opGroups := append(slices.Clone(bastion.SecurityGroups), op.ID)
	if _, err := ports.Update(ctx, env.neutron, bastion.ID, ports.UpdateOpts{SecurityGroups: &opGroups}).Extract(); err != nil {
		t.Fatal(err)
	}
	bastion = portOf("10.0.0.30")

	// node-2 is a real node (its providerID is its own server) whose status
	// says its InternalIP is the bastion's.
	nodes := simServerNodes(t, env.sim, "10.0.0.11", "10.0.0.12")
	nodes[1].Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.30"}}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "3c2b1a09-3333-4444-8555-a66677778888"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080},
		}},
	}
	ensure(t, env.m, svc, nodes)
	found, err := env.clients.Neutron.FindGroups(ctx, "lb-sg-3c2b1a09-3333-4444-8555-a66677778888-shop-web")
	if err != nil || len(found) != 1 {
		t.Fatalf("the Service's group: %v %v", found, err)
	}
	ours := found[0].ID

	if got := portOf("10.0.0.30"); !slices.Equal(got.SecurityGroups, bastion.SecurityGroups) || got.RevisionNumber != bastion.RevisionNumber {
		t.Errorf("bastion port groups %v (revision %d), want %v (revision %d) untouched", got.SecurityGroups, got.RevisionNumber, bastion.SecurityGroups, bastion.RevisionNumber)
	}
	if got := portOf("10.0.0.11").SecurityGroups; !slices.Contains(got, ours) {
		t.Errorf("honest node-1's port groups %v, want the Service's %s", got, ours)
	}
	if got := portOf("10.0.0.12").SecurityGroups; slices.Contains(got, ours) {
		t.Errorf("node-2's own port groups %v: it lists no address of its own, want no Service group", got)
	}

	t.Run("our group an older release put on the bastion's port is taken off, the operator's groups kept", func(t *testing.T) {
		planted := append(slices.Clone(bastion.SecurityGroups), ours)
		if _, err := ports.Update(ctx, env.neutron, bastion.ID, ports.UpdateOpts{SecurityGroups: &planted}).Extract(); err != nil {
			t.Fatal(err)
		}
		ensure(t, env.m, svc, nodes)
		if got := portOf("10.0.0.30").SecurityGroups; !slices.Equal(got, bastion.SecurityGroups) {
			t.Errorf("bastion port groups %v, want %v", got, bastion.SecurityGroups)
		}
		if got := portOf("10.0.0.11").SecurityGroups; !slices.Contains(got, ours) {
			t.Errorf("honest node-1's port groups %v, want the Service's %s", got, ours)
		}
	})
}
