//go:build e2e

package loadbalancer

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopheros "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/containers"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

const (
	annotationTLS = "loadbalancer.openstack.org/default-tls-container-ref"
	annotationXFF = "loadbalancer.openstack.org/x-forwarded-for"
)

// certificateContainer stores a certificate and its key in the lab's
// Barbican, as a user does before annotating a Service, and returns the
// container's reference.
func (a *cloudAPI) certificateContainer(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	km, err := gopheros.NewKeyManagerV1(a.octavia.ProviderClient, gophercloud.EndpointOpts{Region: framework.LabRegion})
	if err != nil {
		t.Fatal(err)
	}
	var refs []containers.SecretRef
	for _, part := range []string{"certificate", "private_key"} {
		s, err := secrets.Create(ctx, km, secrets.CreateOpts{Name: name + "-" + part, SecretType: secrets.OpaqueSecret,
			Payload: "PEM " + part, PayloadContentType: "text/plain"}).Extract()
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

// listenersOf reads the listeners of the load balancer named lbName with
// their layer-7 fields, by "PROTOCOL/port"; nil while there is no such
// load balancer.
func (a *cloudAPI) listenersOf(ctx context.Context, st *octaviaState, lbName string) (map[string]listeners.Listener, error) {
	lb, ok := st.LBs[lbName]
	if !ok {
		return nil, nil
	}
	pages, err := listeners.List(a.octavia, listeners.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)
	if err != nil {
		return nil, err
	}
	ls, err := listeners.ExtractListeners(pages)
	if err != nil {
		return nil, err
	}
	out := map[string]listeners.Listener{}
	for _, l := range ls {
		out[l.Protocol+"/"+strconv.Itoa(l.ProtocolPort)] = l
	}
	return out, nil
}

// waitListener polls until the load balancer has a listener at key for
// which cond holds, and returns it with the Octavia tree.
func waitListener(ctx context.Context, t *testing.T, api *cloudAPI, lbName, key, what string, cond func(l listeners.Listener, lt listenerTree) bool) (listeners.Listener, listenerTree) {
	t.Helper()
	var got listeners.Listener
	var tree listenerTree
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		st, err := api.state(ctx)
		if err != nil {
			return false, nil
		}
		ls, err := api.listenersOf(ctx, st, lbName)
		if err != nil {
			return false, nil
		}
		last = ""
		for k, l := range ls {
			last += k + " ref=" + l.DefaultTlsContainerRef + " headers=" + strconv.Quote(strings.TrimSpace(headersOf(l))) + "; "
		}
		l, ok := ls[key]
		if !ok || len(ls) != 1 || st.LBs[lbName].Status != "ACTIVE" {
			return false, nil
		}
		got, tree = l, st.LBs[lbName].Listeners[key]
		return cond(got, tree), nil
	})
	if err != nil {
		t.Fatalf("%s: %v; listeners: %s", what, err, last)
	}
	return got, tree
}

func headersOf(l listeners.Listener) string {
	var out []string
	for k, v := range l.InsertHeaders {
		out = append(out, k+"="+v)
	}
	return strings.Join(out, ",")
}

func TestTLSAndXForwardedForListeners(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l := newLab(ctx, t, framework.SimCloudOptions{OctaviaDelay: 300 * time.Millisecond}, "", nil, "l7", 170, 2)
	cp, api := l.cp, l.api
	createNamespace(ctx, t, cp, "l7")
	t.Cleanup(func() { dropServices(t, cp, "l7") })
	ref := api.certificateContainer(ctx, t, "shop-tls")
	nodePorts := func(name string) []string {
		s, err := cp.Admin.CoreV1().Services("l7").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return members(l.nodeIPs(), s.Spec.Ports[0].NodePort)
	}

	t.Run("a TLS Service gets a TERMINATED_HTTPS listener with its Barbican container over an HTTP pool", func(t *testing.T) {
		svc := lbService("l7", "shop", corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(8080)})
		svc.Annotations[annotationTLS] = ref
		if _, err := cp.Admin.CoreV1().Services("l7").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitIngress(ctx, t, cp, "l7", "shop", 90*time.Second)
		want := nodePorts("shop")
		lis, lt := waitListener(ctx, t, api, "kube_service_lab_l7_shop", "TERMINATED_HTTPS/443", "TLS listener", func(listeners.Listener, listenerTree) bool { return true })
		if lis.DefaultTlsContainerRef != ref || len(lis.InsertHeaders) != 0 {
			t.Errorf("listener ref %q headers %v, want %q and none", lis.DefaultTlsContainerRef, lis.InsertHeaders, ref)
		}
		if lt.PoolProtocol != "HTTP" || strings.Join(lt.Members, ",") != strings.Join(want, ",") {
			t.Errorf("pool %+v, want HTTP with members %v", lt, want)
		}
	})

	t.Run("a new container on the annotation is swapped in on the same listener", func(t *testing.T) {
		before, _ := waitListener(ctx, t, api, "kube_service_lab_l7_shop", "TERMINATED_HTTPS/443", "TLS listener", func(listeners.Listener, listenerTree) bool { return true })
		ref2 := api.certificateContainer(ctx, t, "shop-tls-renewed")
		patchAnnotation(ctx, t, cp, "shop", annotationTLS, ref2)
		after, _ := waitListener(ctx, t, api, "kube_service_lab_l7_shop", "TERMINATED_HTTPS/443", "renewed certificate", func(l listeners.Listener, _ listenerTree) bool {
			return l.DefaultTlsContainerRef == ref2
		})
		if after.ID != before.ID {
			t.Errorf("listener replaced (%s -> %s), want an in-place update", before.ID, after.ID)
		}
	})

	t.Run("an x-forwarded-for Service gets an HTTP listener inserting the header over an HTTP pool", func(t *testing.T) {
		svc := lbService("l7", "web")
		svc.Annotations[annotationXFF] = "true"
		if _, err := cp.Admin.CoreV1().Services("l7").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitIngress(ctx, t, cp, "l7", "web", 90*time.Second)
		want := nodePorts("web")
		lis, lt := waitListener(ctx, t, api, "kube_service_lab_l7_web", "HTTP/80", "HTTP listener", func(listeners.Listener, listenerTree) bool { return true })
		if lis.InsertHeaders["X-Forwarded-For"] != "true" || lis.DefaultTlsContainerRef != "" {
			t.Errorf("listener headers %v ref %q, want X-Forwarded-For=true and no certificate", lis.InsertHeaders, lis.DefaultTlsContainerRef)
		}
		if lt.PoolProtocol != "HTTP" || strings.Join(lt.Members, ",") != strings.Join(want, ",") {
			t.Errorf("pool %+v, want HTTP with members %v", lt, want)
		}
	})

	t.Run("turning x-forwarded-for off brings back a TCP listener and pool", func(t *testing.T) {
		patchAnnotation(ctx, t, cp, "web", annotationXFF, "false")
		lis, _ := waitListener(ctx, t, api, "kube_service_lab_l7_web", "TCP/80", "TCP listener", func(_ listeners.Listener, lt listenerTree) bool {
			return lt.PoolProtocol == "TCP" && len(lt.Members) == 2
		})
		if len(lis.InsertHeaders) != 0 {
			t.Errorf("TCP listener with headers %v", lis.InsertHeaders)
		}
	})

	t.Run("a container Barbican does not have is an Event naming the annotation, and nothing is created", func(t *testing.T) {
		missing := ref[:strings.LastIndex(ref, "/")+1] + "00000000-0000-4000-8000-000000000000"
		before, err := api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fipsBefore, err := api.floatingIPs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		svc := lbService("l7", "nocert", corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(8080)})
		svc.Annotations[annotationTLS] = missing
		if _, err := cp.Admin.CoreV1().Services("l7").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			e := events(ctx, cp, "l7", "nocert")
			return strings.Contains(e, annotationTLS) && strings.Contains(e, missing), nil
		})
		if err != nil {
			t.Errorf("no Event naming the annotation and the container: %s", events(ctx, cp, "l7", "nocert"))
		}
		after, err := api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after.N != before.N || after.Listeners != before.Listeners {
			t.Errorf("load balancers %d -> %d, listeners %d -> %d: something was created", before.N, after.N, before.Listeners, after.Listeners)
		}
		fips, err := api.floatingIPs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(fips) != len(fipsBefore) {
			t.Errorf("floating IPs %d -> %d: one was allocated", len(fipsBefore), len(fips))
		}
	})
}

func patchAnnotation(ctx context.Context, t *testing.T, cp *framework.ControlPlane, name, key, value string) {
	t.Helper()
	s, err := cp.Admin.CoreV1().Services("l7").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Annotations[key] = value
	if _, err := cp.Admin.CoreV1().Services("l7").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
