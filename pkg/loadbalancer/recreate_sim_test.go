package loadbalancer_test

import (
	"context"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/internal/cloudsim"
)

// Octavia ends the create in ERROR (a provisioning fault); the next syncs
// replace the load balancer and the Service keeps the floating IP it got
// at the first sync.
func TestAgainstTheSimulatorALoadBalancerInErrorIsRecreatedWithItsFloatingIP(t *testing.T) {
	env := newSimEnv(t, 20*time.Millisecond)
	env.m.Requeue = 20 * time.Millisecond
	env.m.SyncWait = -1 // the first sync returns before Octavia fails the create
	ctx := context.Background()
	if err := env.sim.SetFault(cloudsim.FaultRule{Service: cloudsim.ServiceLoadBalancer, Operation: "provisioning", Times: 1}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
	}
	nodes := simNodes("10.0.0.11", "10.0.0.12")
	if _, err := env.m.Ensure(ctx, "lab", svc, nodes); err == nil {
		t.Fatal("the first Ensure reported a finished load balancer")
	}
	first := onlyLB(t, env)
	fips, err := env.m.Neutron.FloatingIPs(ctx, first.VipPortID, "")
	if err != nil || len(fips) != 1 {
		t.Fatalf("floating IPs of the VIP port: %v %v", fips, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for onlyLB(t, env).ProvisioningStatus != "ERROR" {
		if time.Now().After(deadline) {
			t.Fatal("the load balancer never went to ERROR")
		}
		time.Sleep(10 * time.Millisecond)
	}

	st := ensure(t, env.m, svc, nodes)
	if len(st.Ingress) != 1 || st.Ingress[0].IP != fips[0].Address {
		t.Errorf("ingress %v, want the floating IP %s kept", st.Ingress, fips[0].Address)
	}
	lb := onlyLB(t, env)
	if lb.ID == first.ID || lb.ProvisioningStatus != "ACTIVE" {
		t.Errorf("load balancer %s is %s, want a new ACTIVE one", lb.ID, lb.ProvisioningStatus)
	}
	moved, err := env.m.Neutron.FloatingIPs(ctx, "", fips[0].Address)
	if err != nil || len(moved) != 1 || moved[0].PortID != lb.VipPortID {
		t.Errorf("floating IP %v (%v), want it on the new VIP port %s", moved, err, lb.VipPortID)
	}
}

// onlyLB waits for the Service's broken load balancer to be gone and
// returns the one load balancer left.
func onlyLB(t *testing.T, env simEnv) loadbalancers.LoadBalancer {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		pages, err := loadbalancers.List(env.octavia, loadbalancers.ListOpts{}).AllPages(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		lbs, err := loadbalancers.ExtractLoadBalancers(pages)
		if err != nil {
			t.Fatal(err)
		}
		if len(lbs) == 1 {
			return lbs[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d load balancers, want 1", len(lbs))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
