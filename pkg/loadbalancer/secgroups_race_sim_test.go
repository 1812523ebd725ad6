package loadbalancer_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/pkg/openstack"
)

// racingPortGroups lets another writer add its group to a port between our
// read of the port and our first write to it.
type racingPortGroups struct {
	*openstack.Neutron
	raw    *gophercloud.ServiceClient
	portID string
	group  string
	raced  bool
}

func (r *racingPortGroups) SetPortGroups(ctx context.Context, portID string, groupIDs []string, revision int) error {
	if portID == r.portID && !r.raced {
		r.raced = true
		p, err := ports.Get(ctx, r.raw, portID).Extract()
		if err != nil {
			return err
		}
		sgs := append(slices.Clone(p.SecurityGroups), r.group)
		if err := ports.Update(ctx, r.raw, portID, ports.UpdateOpts{SecurityGroups: &sgs}).Err; err != nil {
			return err
		}
	}
	return r.Neutron.SetPortGroups(ctx, portID, groupIDs, revision)
}

func TestAConcurrentChangeToAPortsGroupsIsKept(t *testing.T) {
	env := newSimEnv(t, 20*time.Millisecond)
	env.m.Requeue = 20 * time.Millisecond
	env.m.Config.ManageSecurityGroups = true
	nc, err := env.clients.NeutronClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	late, err := groups.Create(ctx, nc, groups.CreateOpts{Name: "late-sg"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	portID, err := env.clients.Neutron.PortsOnSubnet(ctx, env.subnetID)
	if err != nil {
		t.Fatal(err)
	}
	var node1 openstack.Port
	for _, p := range portID {
		if p.HasFixedIP("10.0.0.11") {
			node1 = p
		}
	}
	racer := &racingPortGroups{Neutron: env.clients.Neutron, raw: nc, portID: node1.ID, group: late.ID}
	env.m.SecurityGroups = racer

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "6a1f0c1e-2222-4333-8444-955566667777"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080},
		}},
	}
	env.sim.ResetCalls()
	ensure(t, env.m, svc, simServerNodes(t, env.sim, "10.0.0.11"))
	if !racer.raced {
		t.Fatal("the Service's group was never put on node-1's port")
	}
	found, err := env.clients.Neutron.FindGroups(ctx, "lb-sg-6a1f0c1e-2222-4333-8444-955566667777-shop-web")
	if err != nil || len(found) != 1 {
		t.Fatalf("the Service's group: %v %v", found, err)
	}
	p, err := ports.Get(ctx, nc, node1.ID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(node1.SecurityGroups), late.ID, found[0].ID)
	if !slices.Equal(p.SecurityGroups, want) {
		t.Errorf("node-1 port groups %v, want %v (the concurrent writer's group kept)", p.SecurityGroups, want)
	}
	if env.sim.Calls()["network.ports.get"] == 0 {
		t.Errorf("calls %v: the port was not read again after the 412", env.sim.Calls())
	}
}
