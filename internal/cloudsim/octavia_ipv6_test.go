package cloudsim

import (
	"net/netip"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

func TestIPv6VIPs(t *testing.T) {
	sd := testSeed()
	for i := range sd.Networks {
		if sd.Networks[i].Name == "private" {
			sd.Networks[i].Subnets = append(sd.Networks[i].Subnets, SeedSubnet{Name: "private-v6", CIDR: "fd00:10::/64"})
		}
	}
	env := newLBEnv(t, Options{Seed: sd})
	ctx := ctxT(t)
	pages, err := subnets.List(env.net, subnets.ListOpts{Name: "private-v6"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sns, _ := subnets.ExtractSubnets(pages)
	if len(sns) != 1 || sns[0].IPVersion != 6 {
		t.Fatalf("IPv6 subnet: %+v", sns)
	}
	prefix := netip.MustParsePrefix(sns[0].CIDR)

	t.Run("vip_subnet_id on an IPv6 subnet gives an IPv6 VIP on a port of that subnet", func(t *testing.T) {
		lb, err := loadbalancers.Create(ctx, env.lb, loadbalancers.CreateOpts{Name: "v6", VipSubnetID: sns[0].ID}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		a, err := netip.ParseAddr(lb.VipAddress)
		if err != nil || !prefix.Contains(a) || lb.VipSubnetID != sns[0].ID {
			t.Fatalf("VIP %q on subnet %s, want an address of %s", lb.VipAddress, lb.VipSubnetID, prefix)
		}
		p, err := ports.Get(ctx, env.net, lb.VipPortID).Extract()
		if err != nil || len(p.FixedIPs) != 1 || p.FixedIPs[0].IPAddress != lb.VipAddress {
			t.Fatalf("VIP port %+v, %v: want only the IPv6 VIP", p, err)
		}
	})
	t.Run("a requested IPv6 vip_address is honoured", func(t *testing.T) {
		lb, err := loadbalancers.Create(ctx, env.lb, loadbalancers.CreateOpts{Name: "v6-fixed", VipSubnetID: sns[0].ID, VipAddress: "fd00:10::77"}).Extract()
		if err != nil || lb.VipAddress != "fd00:10::77" {
			t.Fatalf("VIP %v, %v", lb, err)
		}
	})
}
