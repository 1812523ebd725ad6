package loadbalancer_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

func withTaggedFloatingSubnet(sd *cloudsim.Seed) {
	for i := range sd.Networks {
		if sd.Networks[i].Name == "public" {
			sd.Networks[i].Subnets = append(sd.Networks[i].Subnets,
				cloudsim.SeedSubnet{Name: "public-dmz", CIDR: "198.51.100.0/24", Tags: []string{"dmz", "v4"}})
		}
	}
}

func webService(annotations map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: annotations},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
	}
}

func TestAgainstTheSimulatorTheFloatingIPComesFromTheChosenSubnet(t *testing.T) {
	dmz := netip.MustParsePrefix("198.51.100.0/24")
	for _, annotations := range []map[string]string{
		{loadbalancer.AnnotationFloatingSubnetTags: "&dmz,v4"},
		{loadbalancer.AnnotationFloatingSubnet: "public-d*"},
		{loadbalancer.AnnotationFloatingSubnetTags: "!dmz"},
	} {
		env := newSimEnv(t, 10*time.Millisecond, withTaggedFloatingSubnet)
		env.m.Requeue = 10 * time.Millisecond
		st := ensure(t, env.m, webService(annotations), simNodes("10.0.0.11"))
		ip := netip.MustParseAddr(st.Ingress[0].IP)
		_, negated := annotations[loadbalancer.AnnotationFloatingSubnetTags]
		negated = negated && annotations[loadbalancer.AnnotationFloatingSubnetTags][0] == '!'
		if dmz.Contains(ip) == negated {
			t.Errorf("%v: floating IP %s, want it %sin %s", annotations, ip, map[bool]string{true: "not ", false: ""}[negated], dmz)
		}
	}
}

func TestAgainstTheSimulatorAPortGivenAsVIPOutlivesTheLoadBalancer(t *testing.T) {
	env := newSimEnv(t, 10*time.Millisecond)
	env.m.Requeue = 10 * time.Millisecond
	ctx := context.Background()
	clients := env.neutron
	pages, err := networks.List(clients, networks.ListOpts{Name: "private"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nets, err := networks.ExtractNetworks(pages)
	if err != nil || len(nets) != 1 {
		t.Fatalf("network private: %v %v", nets, err)
	}
	networkID := nets[0].ID
	port, err := ports.Create(ctx, clients, ports.CreateOpts{NetworkID: networkID, Name: "my-vip"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	svc := webService(map[string]string{loadbalancer.AnnotationPortID: port.ID})
	st := ensure(t, env.m, svc, simNodes("10.0.0.11"))
	fips, err := env.m.Neutron.FloatingIPs(ctx, port.ID, "")
	if err != nil || len(fips) != 1 || st.Ingress[0].IP != fips[0].Address {
		t.Fatalf("floating IPs on the given port %v (%v), ingress %v", fips, err, st.Ingress)
	}
	if err := env.m.Delete(ctx, "lab", svc); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		lbs, err := env.m.Octavia.FindLoadBalancers(ctx, "kube_service_lab_shop_web", loadbalancer.ClusterTag("uid-1"))
		if err != nil {
			t.Fatal(err)
		}
		if len(lbs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the load balancer was not deleted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := ports.Get(ctx, clients, port.ID).Extract(); err != nil {
		t.Errorf("the user's port is gone with the load balancer: %v", err)
	}
}

func TestAgainstTheSimulatorLBProviderIsTheOctaviaProvider(t *testing.T) {
	env := newSimEnv(t, 10*time.Millisecond)
	env.m.Requeue = 10 * time.Millisecond
	env.m.Config.LBProvider = "octavia" // the deprecated alias of amphora
	ensure(t, env.m, webService(nil), simNodes("10.0.0.11"))

	other := newSimEnv(t, 10*time.Millisecond)
	other.m.Config.LBProvider = "f5"
	_, err := other.m.Ensure(context.Background(), "lab", webService(nil), simNodes("10.0.0.11"))
	if err == nil || !strings.Contains(err.Error(), "Provider 'f5' is not enabled") {
		t.Errorf("Ensure: %v, want Octavia's refusal of a provider it does not have", err)
	}
}
