package loadbalancer_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// withTwoEdgeSubnets gives the external network two more subnets: edge-1
// with a single address, edge-2 with room.
func withTwoEdgeSubnets(sd *cloudsim.Seed) {
	for i := range sd.Networks {
		if sd.Networks[i].Name == "public" {
			sd.Networks[i].Subnets = append(sd.Networks[i].Subnets,
				cloudsim.SeedSubnet{Name: "edge-1", CIDR: "198.51.100.0/30"},
				cloudsim.SeedSubnet{Name: "edge-2", CIDR: "198.51.100.64/28"})
		}
	}
}

// A floating subnet Neutron has no free address on (409) is passed over
// for the next one that matches, as upstream does.
func TestAgainstTheSimulatorAFullFloatingSubnetIsPassedOver(t *testing.T) {
	env := newSimEnv(t, 10*time.Millisecond, withTwoEdgeSubnets)
	env.m.Requeue = 10 * time.Millisecond
	ctx := context.Background()
	pages, err := subnets.List(env.neutron, subnets.ListOpts{Name: "edge-1"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	edge1, err := subnets.ExtractSubnets(pages)
	if err != nil || len(edge1) != 1 {
		t.Fatalf("edge-1: %v, %v", edge1, err)
	}
	// Someone else takes edge-1's only address.
	if _, err := floatingips.Create(ctx, env.neutron, floatingips.CreateOpts{FloatingNetworkID: edge1[0].NetworkID, SubnetID: edge1[0].ID}).Extract(); err != nil {
		t.Fatal(err)
	}
	env.sim.ResetCalls()
	st := ensure(t, env.m, webService(map[string]string{loadbalancer.AnnotationFloatingSubnet: "edge-*"}), simNodes("10.0.0.11"))
	ip := netip.MustParseAddr(st.Ingress[0].IP)
	if !netip.MustParsePrefix("198.51.100.64/28").Contains(ip) {
		t.Errorf("floating IP %s, want one of edge-2", ip)
	}
	if n := env.sim.Calls()["network.floatingips.create"]; n != 2 {
		t.Errorf("floating IP creates: %d, want 2 (refused on the full edge-1, then edge-2)", n)
	}
}
