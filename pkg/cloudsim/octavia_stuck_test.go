package cloudsim

import (
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
)

func TestAHangingProvisioningFaultLeavesTheLoadBalancerPending(t *testing.T) {
	env := newLBEnv(t, Options{OctaviaDelay: 10 * time.Millisecond})
	ctx := ctxT(t)
	if err := env.sim.SetFault(FaultRule{Service: ServiceLoadBalancer, Operation: "provisioning", Hang: true, Times: 1}); err != nil {
		t.Fatal(err)
	}
	stuck, err := loadbalancers.Create(ctx, env.lb, loadbalancers.CreateOpts{Name: "stuck", VipSubnetID: env.subnetID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // ten times the Octavia delay
	lb, err := loadbalancers.Get(ctx, env.lb, stuck.ID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if lb.ProvisioningStatus != "PENDING_CREATE" {
		t.Errorf("stuck load balancer is %s, want PENDING_CREATE", lb.ProvisioningStatus)
	}
	next, err := loadbalancers.Create(ctx, env.lb, loadbalancers.CreateOpts{Name: "next", VipSubnetID: env.subnetID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	waitLB(t, env.lb, next.ID, "ACTIVE") // the rule fired once: others settle
}
