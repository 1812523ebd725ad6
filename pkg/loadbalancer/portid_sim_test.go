package loadbalancer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// nodeWithFloatingIP gives node-1 a floating IP, as a node reached from
// outside has.
func nodeWithFloatingIP(sd *cloudsim.Seed) {
	sd.Servers[0].NICs[0].FloatingNetwork = "public"
}

func TestAgainstTheSimulatorANodesPortIsNotTakenForAVIP(t *testing.T) {
	env := newSimEnv(t, 10*time.Millisecond, nodeWithFloatingIP)
	env.m.Requeue = 10 * time.Millisecond
	env.m.ProjectID = env.clients.ProjectID
	ctx := context.Background()
	node, ok := env.sim.ServerByName("node-1")
	if !ok || len(node.PortIDs) != 1 {
		t.Fatalf("node-1: %+v", node)
	}
	nodePort := node.PortIDs[0]
	fipsBefore, err := env.m.Neutron.FloatingIPs(ctx, nodePort, "")
	if err != nil || len(fipsBefore) != 1 {
		t.Fatalf("node-1's floating IPs: %v, %v", fipsBefore, err)
	}
	svc := webService(map[string]string{loadbalancer.AnnotationPortID: nodePort})

	env.sim.ResetCalls()
	_, err = env.m.Ensure(ctx, "lab", svc, simNodes("10.0.0.11"))
	var iae *loadbalancer.InvalidAnnotationError
	if !errors.As(err, &iae) || iae.Annotation != loadbalancer.AnnotationPortID || iae.Value != nodePort ||
		!strings.Contains(err.Error(), node.ID) {
		t.Fatalf("Ensure: %v, want an InvalidAnnotationError on %s naming port %s and its server %s", err, loadbalancer.AnnotationPortID, nodePort, node.ID)
	}
	if n := env.sim.Calls()["load-balancer.loadbalancers.create"]; n != 0 {
		t.Errorf("%d load balancer creates sent, want none", n)
	}
	pages, err := loadbalancers.List(env.octavia, loadbalancers.ListOpts{}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lbs, _ := loadbalancers.ExtractLoadBalancers(pages); len(lbs) != 0 {
		t.Errorf("load balancers %+v, want none", lbs)
	}
	p, err := ports.Get(ctx, env.neutron, nodePort).Extract()
	if err != nil || p.DeviceID != node.ID || p.DeviceOwner != "compute:nova" {
		t.Errorf("node-1's port after the refusal: %+v, %v", p, err)
	}
	fipsAfter, err := env.m.Neutron.FloatingIPs(ctx, nodePort, "")
	if err != nil || len(fipsAfter) != 1 || fipsAfter[0].ID != fipsBefore[0].ID || fipsAfter[0].Address != fipsBefore[0].Address {
		t.Errorf("node-1's floating IPs %v (%v), want %v unchanged", fipsAfter, err, fipsBefore)
	}
	// Nothing to clean up either: the Service going touches no node.
	if err := env.m.Delete(ctx, "lab", svc); err != nil {
		t.Fatal(err)
	}
	fipsAfter, err = env.m.Neutron.FloatingIPs(ctx, nodePort, "")
	if err != nil || len(fipsAfter) != 1 || fipsAfter[0].ID != fipsBefore[0].ID {
		t.Errorf("node-1's floating IPs after the Service's delete %v (%v), want %v", fipsAfter, err, fipsBefore)
	}
}

func TestAgainstTheSimulatorAFreePortIDIsStillTheVIP(t *testing.T) {
	env := newSimEnv(t, 10*time.Millisecond)
	env.m.Requeue = 10 * time.Millisecond
	env.m.ProjectID = env.clients.ProjectID
	ctx := context.Background()
	node, _ := env.sim.ServerByName("node-1")
	p, err := env.m.Neutron.Port(ctx, node.PortIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	free, err := ports.Create(ctx, env.neutron, ports.CreateOpts{NetworkID: p.NetworkID, Name: "my-vip"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	st := ensure(t, env.m, webService(map[string]string{loadbalancer.AnnotationPortID: free.ID}), simNodes("10.0.0.11"))
	lbs, err := env.m.Octavia.FindLoadBalancers(ctx, "kube_service_lab_shop_web", loadbalancer.ClusterTag("uid-1"))
	if err != nil || len(lbs) != 1 || lbs[0].VIPPortID != free.ID {
		t.Fatalf("load balancers %+v (%v), want one on port %s", lbs, err, free.ID)
	}
	fips, err := env.m.Neutron.FloatingIPs(ctx, free.ID, "")
	if err != nil || len(fips) != 1 || st.Ingress[0].IP != fips[0].Address {
		t.Errorf("floating IPs on the free port %v (%v), ingress %v", fips, err, st.Ingress)
	}
}
