package loadbalancer_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cloud-provider/api"

	"github.com/stackward/stackward/pkg/loadbalancer"
)

func simService(name string, port, nodePort int32, annotations map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: annotations},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: "p", Protocol: corev1.ProtocolTCP, Port: port, NodePort: nodePort}}},
	}
}

func deleteUntilDone(t *testing.T, m *loadbalancer.Manager, svc *corev1.Service) {
	t.Helper()
	for range 100 {
		err := m.Delete(context.Background(), "lab", svc)
		if err == nil {
			return
		}
		var re *api.RetryError
		if !errors.As(err, &re) {
			t.Fatalf("Delete %s: %v", svc.Name, err)
		}
		time.Sleep(re.RetryAfter())
	}
	t.Fatalf("Delete %s did not finish", svc.Name)
}

// Two Services on one load balancer through the real adapters: the tags
// and listener tags reach Octavia, and the load balancer goes with the
// last Service.
func TestSharedLoadBalancerAgainstTheSimulator(t *testing.T) {
	env := newSimEnv(t, 20*time.Millisecond)
	env.m.Requeue = 20 * time.Millisecond
	ctx := context.Background()
	ns := simNodes("10.0.0.11", "10.0.0.12")
	web := simService("web", 80, 30080, nil)
	stWeb := ensure(t, env.m, web, ns)
	found, err := env.m.Octavia.FindLoadBalancers(ctx, "kube_service_lab_shop_web", loadbalancer.ClusterTag("uid-1"))
	if err != nil || len(found) != 1 {
		t.Fatalf("load balancer of web: %v %v", found, err)
	}
	lbID := found[0].ID

	api := simService("api", 8080, 30880, map[string]string{loadbalancer.AnnotationLoadBalancerID: lbID})
	env.sim.ResetCalls()
	stAPI := ensure(t, env.m, api, ns)
	t.Logf("joining a shared load balancer: %v", env.sim.Calls())
	if stAPI.Ingress[0].IP != stWeb.Ingress[0].IP {
		t.Errorf("ingress %v vs %v", stAPI.Ingress, stWeb.Ingress)
	}
	lb, err := loadbalancers.Get(ctx, env.octavia, lbID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"kube_service_lab_shop_web", "kube_service_lab_shop_api"} {
		if !slices.Contains(lb.Tags, tag) {
			t.Errorf("load balancer tags %v lack %s", lb.Tags, tag)
		}
	}
	pages, err := listeners.List(env.octavia, listeners.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := listeners.ExtractListeners(pages)
	tagged := map[int][]string{}
	for _, l := range ls {
		tagged[l.ProtocolPort] = l.Tags
	}
	if !slices.Equal(tagged[80], []string{"kube_service_lab_shop_web"}) || !slices.Equal(tagged[8080], []string{"kube_service_lab_shop_api"}) {
		t.Errorf("listener tags %v", tagged)
	}

	deleteUntilDone(t, env.m, web)
	if _, err := loadbalancers.Get(ctx, env.octavia, lbID).Extract(); err != nil {
		t.Fatalf("the load balancer went with its creator while another Service uses it: %v", err)
	}
	if st, exists, err := env.m.Get(ctx, "lab", api); err != nil || !exists || st.Ingress[0].IP != stWeb.Ingress[0].IP {
		t.Errorf("Get api: %v %v %v", st, exists, err)
	}
	deleteUntilDone(t, env.m, api)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := loadbalancers.Get(ctx, env.octavia, lbID).Extract()
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the load balancer outlived its last Service")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
