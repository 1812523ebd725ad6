package cloudsim

import (
	"net/netip"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

func subnetID(t *testing.T, env lbEnv, name string) string {
	t.Helper()
	pages, err := subnets.List(env.net, subnets.ListOpts{Name: name}).AllPages(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	sns, _ := subnets.ExtractSubnets(pages)
	if len(sns) != 1 {
		t.Fatalf("subnets named %s: %+v", name, sns)
	}
	return sns[0].ID
}

func TestAdditionalVIPs(t *testing.T) {
	sd := testSeed()
	for i := range sd.Networks {
		if sd.Networks[i].Name == "private" {
			sd.Networks[i].Subnets = append(sd.Networks[i].Subnets,
				SeedSubnet{Name: "private-v6", CIDR: "fd00:10::/64"}, SeedSubnet{Name: "private-v6b", CIDR: "fd00:11::/64"})
		}
	}
	sd.Networks = append(sd.Networks,
		SeedNetwork{Name: "other", Subnets: []SeedSubnet{{Name: "other-v6", CIDR: "fd00:20::/64"}}},
		SeedNetwork{Name: "ops-net", Project: "ops", Subnets: []SeedSubnet{{Name: "ops-v6", CIDR: "fd00:30::/64"}}})
	env := newLBEnv(t, Options{Seed: sd})
	ctx := ctxT(t)
	v4, v6 := env.subnetID, subnetID(t, env, "private-v6")
	v6net := netip.MustParsePrefix("fd00:10::/64")

	t.Run("an IPv6 additional VIP is a second fixed IP of the VIP port, shown in the load balancer and freed with it", func(t *testing.T) {
		lb, err := loadbalancers.Create(ctx, env.lb, loadbalancers.CreateOpts{Name: "dual", VipSubnetID: v4,
			AdditionalVips: []loadbalancers.AdditionalVip{{SubnetID: v6}}}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if len(lb.AdditionalVips) != 1 || lb.AdditionalVips[0].SubnetID != v6 || !v6net.Contains(parseAddr(lb.AdditionalVips[0].IPAddress)) {
			t.Fatalf("additional VIPs in the create answer: %+v, want one address of %s", lb.AdditionalVips, v6net)
		}
		got := waitLB(t, env.lb, lb.ID, "ACTIVE")
		if len(got.AdditionalVips) != 1 || got.AdditionalVips[0] != lb.AdditionalVips[0] {
			t.Errorf("GET additional VIPs %+v, want %+v", got.AdditionalVips, lb.AdditionalVips)
		}
		p, err := ports.Get(ctx, env.net, lb.VipPortID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if len(p.FixedIPs) != 2 || p.FixedIPs[0].IPAddress != lb.VipAddress || p.FixedIPs[1].IPAddress != lb.AdditionalVips[0].IPAddress {
			t.Errorf("VIP port fixed IPs %+v, want the IPv4 VIP then the IPv6 one", p.FixedIPs)
		}
		if err := loadbalancers.Delete(ctx, env.lb, lb.ID, nil).ExtractErr(); err != nil {
			t.Fatal(err)
		}
		waitLB(t, env.lb, lb.ID, "")
		if _, err := ports.Get(ctx, env.net, lb.VipPortID).Extract(); !gophercloud.ResponseCodeIs(err, 404) {
			t.Errorf("VIP port after delete: %v, want 404", err)
		}
		// The address is free again: asking for it succeeds.
		again, err := loadbalancers.Create(ctx, env.lb, loadbalancers.CreateOpts{Name: "again", VipSubnetID: v4,
			AdditionalVips: []loadbalancers.AdditionalVip{{SubnetID: v6, IPAddress: lb.AdditionalVips[0].IPAddress}}}).Extract()
		if err != nil || again.AdditionalVips[0].IPAddress != lb.AdditionalVips[0].IPAddress {
			t.Fatalf("reusing %s: %+v, %v", lb.AdditionalVips[0].IPAddress, again, err)
		}
	})

	t.Run("a single-stack load balancer shows an empty list", func(t *testing.T) {
		lb, err := loadbalancers.Create(ctx, env.lb, loadbalancers.CreateOpts{Name: "single", VipSubnetID: v4}).Extract()
		if err != nil || lb.AdditionalVips == nil || len(lb.AdditionalVips) != 0 {
			t.Fatalf("additional VIPs %#v, %v: want []", lb, err)
		}
	})

	for _, tc := range []struct {
		name string
		vips []loadbalancers.AdditionalVip
	}{
		{"an unknown subnet is refused", []loadbalancers.AdditionalVip{{SubnetID: "8a0f4f36-0000-4000-8000-000000000000"}}},
		{"the primary VIP's subnet again is refused", []loadbalancers.AdditionalVip{{SubnetID: v4}}},
		{"the same subnet twice is refused", []loadbalancers.AdditionalVip{{SubnetID: v6}, {SubnetID: v6}}},
		{"a subnet of another network is refused", []loadbalancers.AdditionalVip{{SubnetID: subnetID(t, env, "other-v6")}}},
		{"a subnet of another project's network is refused", []loadbalancers.AdditionalVip{{SubnetID: simSubnetID(env.sim, "ops-v6")}}},
		{"an address outside the subnet is refused", []loadbalancers.AdditionalVip{{SubnetID: v6, IPAddress: "fd00:99::5"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := portCount(env.sim)
			_, err := loadbalancers.Create(ctx, env.lb, loadbalancers.CreateOpts{Name: "bad", VipSubnetID: v4, AdditionalVips: tc.vips}).Extract()
			if !gophercloud.ResponseCodeIs(err, 400) {
				t.Fatalf("create: %v, want 400", err)
			}
			pages, err := loadbalancers.List(env.lb, loadbalancers.ListOpts{Name: "bad"}).AllPages(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if lbs, _ := loadbalancers.ExtractLoadBalancers(pages); len(lbs) != 0 || portCount(env.sim) != before {
				t.Errorf("after a refused create: %d load balancers named bad, ports %d -> %d", len(lbs), before, portCount(env.sim))
			}
		})
	}
}

// simSubnetID finds a subnet the test's user cannot see.
func simSubnetID(s *Sim, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sn := range s.state.subnets.all() {
		if sn.Name == name {
			return sn.ID
		}
	}
	return ""
}

func portCount(s *Sim) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.state.ports.all())
}
