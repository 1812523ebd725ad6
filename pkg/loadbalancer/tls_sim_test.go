package loadbalancer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopheros "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/containers"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/pkg/loadbalancer"
)

// simCertificate stores a certificate container in the simulator's
// Barbican, as a user would before annotating the Service.
func simCertificate(t testing.TB, octavia *gophercloud.ServiceClient, name string) string {
	t.Helper()
	km, err := gopheros.NewKeyManagerV1(octavia.ProviderClient, gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var refs []containers.SecretRef
	for _, part := range []string{"certificate", "private_key"} {
		s, err := secrets.Create(ctx, km, secrets.CreateOpts{Name: name + "-" + part, Payload: "PEM " + part, PayloadContentType: "text/plain"}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, containers.SecretRef{Name: part, SecretRef: s.SecretRef})
	}
	c, err := containers.Create(ctx, km, containers.CreateOpts{Type: containers.CertificateContainer, Name: name, SecretRefs: refs}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	return c.ContainerRef
}

func tlsService(name string, annotations map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: annotations},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443},
		}},
	}
}

// listenerOf reads the only listener of the Service's load balancer and
// its pool with plain gophercloud.
func listenerOf(t *testing.T, c *gophercloud.ServiceClient, lbName string) (*listeners.Listener, *pools.Pool) {
	t.Helper()
	ctx := context.Background()
	pages, err := loadbalancers.List(c, loadbalancers.ListOpts{Name: lbName}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lbs, _ := loadbalancers.ExtractLoadBalancers(pages)
	if len(lbs) != 1 || len(lbs[0].Listeners) != 1 {
		t.Fatalf("load balancers named %s: %+v", lbName, lbs)
	}
	l, err := listeners.Get(ctx, c, lbs[0].Listeners[0].ID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	p, err := pools.Get(ctx, c, l.DefaultPoolID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	return l, p
}

func TestTLSServiceAgainstTheSimulator(t *testing.T) {
	env := newSimEnv(t, 0)
	env.m.Requeue = 20 * time.Millisecond
	ref := simCertificate(t, env.octavia, "web-tls")
	svc := tlsService("web", map[string]string{loadbalancer.AnnotationTLSContainerRef: ref, loadbalancer.AnnotationXForwardedFor: "true"})
	env.sim.ResetCalls()
	ensure(t, env.m, svc, simNodes("10.0.0.11", "10.0.0.12"))
	if n := env.sim.Calls()["load-balancer.loadbalancers.create"]; n != 1 {
		t.Errorf("%d load balancer creates, want one fully populated create", n)
	}
	l, p := listenerOf(t, env.octavia, "kube_service_lab_shop_web")
	if l.Protocol != "TERMINATED_HTTPS" || l.ProtocolPort != 443 || l.DefaultTlsContainerRef != ref || l.InsertHeaders["X-Forwarded-For"] != "true" {
		t.Errorf("listener %s/%d ref %q headers %v", l.Protocol, l.ProtocolPort, l.DefaultTlsContainerRef, l.InsertHeaders)
	}
	if p.Protocol != "HTTP" || len(p.Members) != 2 {
		t.Errorf("pool %s with %d members, want HTTP with both nodes", p.Protocol, len(p.Members))
	}

	t.Run("another certificate is one listener update", func(t *testing.T) {
		ref2 := simCertificate(t, env.octavia, "web-tls-2")
		svc.Annotations[loadbalancer.AnnotationTLSContainerRef] = ref2
		env.sim.ResetCalls()
		ensure(t, env.m, svc, simNodes("10.0.0.11", "10.0.0.12"))
		writes := 0
		for k, n := range env.sim.Calls() {
			if !strings.HasSuffix(k, ".list") && !strings.HasSuffix(k, ".get") && !strings.HasSuffix(k, ".status") {
				writes += n
			}
		}
		if c := env.sim.Calls()["load-balancer.listeners.update"]; c != 1 || writes != 1 {
			t.Errorf("calls %v, want one listener update and nothing else written", env.sim.Calls())
		}
		if l, _ := listenerOf(t, env.octavia, "kube_service_lab_shop_web"); l.DefaultTlsContainerRef != ref2 {
			t.Errorf("listener ref %q, want %q", l.DefaultTlsContainerRef, ref2)
		}
	})

	t.Run("a container Barbican does not have is refused naming the annotation, nothing is created", func(t *testing.T) {
		missing := ref[:strings.LastIndex(ref, "/")+1] + "00000000-0000-4000-8000-000000000000"
		bad := tlsService("bad", map[string]string{loadbalancer.AnnotationTLSContainerRef: missing})
		_, err := env.m.Ensure(context.Background(), "lab", bad, simNodes("10.0.0.11"))
		var iae *loadbalancer.InvalidAnnotationError
		if !errors.As(err, &iae) || iae.Value != missing {
			t.Fatalf("Ensure: %v, want an InvalidAnnotationError naming %s", err, missing)
		}
		pages, err := loadbalancers.List(env.octavia, loadbalancers.ListOpts{Name: "kube_service_lab_shop_bad"}).AllPages(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if lbs, _ := loadbalancers.ExtractLoadBalancers(pages); len(lbs) != 0 {
			t.Errorf("load balancers left: %+v", lbs)
		}
	})
}
