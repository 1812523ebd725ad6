package cloudsim

import (
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
)

func TestACatalogWithoutOctavia(t *testing.T) {
	_, authURL := startSim(t, Options{WithoutServices: []string{ServiceLoadBalancer}})
	p := provider(t, demoAuth(authURL))
	eo := gophercloud.EndpointOpts{Region: "RegionOne"}
	if _, err := openstack.NewLoadBalancerV2(p, eo); err == nil {
		t.Error("the catalog still lists a load-balancer service")
	}
	if _, err := openstack.NewNetworkV2(p, eo); err != nil {
		t.Errorf("the network service went too: %v", err)
	}
	if _, err := openstack.NewComputeV2(p, eo); err != nil {
		t.Errorf("the compute service went too: %v", err)
	}
}
