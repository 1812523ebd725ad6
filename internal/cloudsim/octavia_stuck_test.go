package cloudsim

import (
	"errors"
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

// A bounded stuck change stays PENDING_* for HangFor and then ends as
// Octavia's controller ends it after its retry timeout: in ERROR when the
// rule has a Status, in ACTIVE otherwise.
func TestABoundedHangEndsTheChangeAfterItsDuration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		want   string
	}{{"ends in ERROR", 500, "ERROR"}, {"ends in ACTIVE", 0, "ACTIVE"}} {
		t.Run(tc.name, func(t *testing.T) {
			env := newLBEnv(t, Options{OctaviaDelay: 10 * time.Millisecond})
			ctx := ctxT(t)
			hangFor := 400 * time.Millisecond
			rule := FaultRule{Service: ServiceLoadBalancer, Operation: "provisioning", Hang: true, HangFor: hangFor, Status: tc.status, Times: 1}
			if err := env.sim.SetFault(rule); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			lb, err := loadbalancers.Create(ctx, env.lb, loadbalancers.CreateOpts{Name: "amphora-lost", VipSubnetID: env.subnetID}).Extract()
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(hangFor / 2) // twenty times the Octavia delay, half the hang
			mid, err := loadbalancers.Get(ctx, env.lb, lb.ID).Extract()
			if err != nil {
				t.Fatal(err)
			}
			if mid.ProvisioningStatus != "PENDING_CREATE" {
				t.Errorf("half way through the hang the load balancer is %s, want PENDING_CREATE", mid.ProvisioningStatus)
			}
			if uses := env.sim.FaultUses(); len(uses) != 1 || uses[0] != 1 {
				t.Errorf("fault uses %v, want [1]", uses)
			}
			waitLB(t, env.lb, lb.ID, tc.want)
			if took := time.Since(start); took < hangFor {
				t.Errorf("the change ended after %s, before the %s hang", took, hangFor)
			}
		})
	}
}

func TestHangForNeedsAHangingProvisioningRule(t *testing.T) {
	sim, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	for _, r := range []FaultRule{
		{Service: ServiceLoadBalancer, Operation: "provisioning", HangFor: time.Second},
		{Service: ServiceLoadBalancer, Operation: "loadbalancers.create", Hang: true, HangFor: time.Second},
		{Service: ServiceLoadBalancer, Operation: "provisioning", Hang: true, HangFor: -time.Second},
	} {
		if err := sim.SetFault(r); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetFault(%+v) = %v, want ErrInvalid", r, err)
		}
	}
}
