package provider

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/openstack"
)

func TestWithoutOctaviaServicesAreToldAndNothingIsDeletedOnDoubt(t *testing.T) {
	n := &noLoadBalancers{why: errors.New("find the load-balancer service (region \"RegionOne\", interface public) in the catalog: no endpoint")}
	fresh := &corev1.Service{}
	served := &corev1.Service{Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}}}}
	ctx := context.Background()
	tests := []struct {
		name    string
		call    func() error
		wantErr bool
	}{
		{"ensuring a load balancer fails naming the missing service", func() error { _, err := n.EnsureLoadBalancer(ctx, "lab", fresh, nil); return err }, true},
		{"a Service never given an address has no load balancer to look for", func() error {
			_, exists, err := n.GetLoadBalancer(ctx, "lab", fresh)
			if exists {
				return errors.New("exists")
			}
			return err
		}, false},
		{"a Service never given an address is deleted at once", func() error { return n.EnsureLoadBalancerDeleted(ctx, "lab", fresh) }, false},
		{"a Service with an address may have a load balancer: looking is an error, not absence", func() error { _, _, err := n.GetLoadBalancer(ctx, "lab", served); return err }, true},
		{"a Service with an address keeps its finalizer until the load balancers are reachable", func() error { return n.EnsureLoadBalancerDeleted(ctx, "lab", served) }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "load-balancer service") {
				t.Errorf("error %q does not name the missing service", err)
			}
		})
	}
}

// TestClientsWithoutACatalogServeNodesOnly: clients that have a Compute
// and no service catalog (no authenticated provider) are a cloud without
// Octavia: the provider is built, Services are told why they get no load
// balancer, and no routes are offered.
func TestClientsWithoutACatalogServeNodesOnly(t *testing.T) {
	cfg := testConfig()
	w, err := NewWithServices(context.Background(), cfg, &openstack.Clients{Compute: newFakeCompute(testServers()...)}, Options{}, ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.InstancesV2(); !ok {
		t.Error("no InstancesV2: nodes would not be served")
	}
	lb, ok := w.LoadBalancer()
	if !ok {
		t.Fatal("no LoadBalancer: the service controller would not run and Services would wait silently")
	}
	_, err = lb.EnsureLoadBalancer(context.Background(), "lab", &corev1.Service{}, nil)
	if !errors.Is(err, openstack.ErrNoCatalog) || !strings.Contains(err.Error(), "load-balancer service") {
		t.Errorf("EnsureLoadBalancer: %v; want an error naming the load-balancer service and the missing catalog", err)
	}
	if _, ok := w.Routes(); ok {
		t.Error("routes offered without a [Route] router-id")
	}
}
