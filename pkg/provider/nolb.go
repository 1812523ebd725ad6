package provider

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stackward/stackward/pkg/loadbalancer"
)

// noLoadBalancers serves Services of type LoadBalancer on a cloud whose
// catalog has no load-balancer (Octavia) service, or whose load balancers
// could not be set up. Without it k8s.io/cloud-provider would not start
// the service controller at all, and a Service would wait for an address
// with nothing saying why. With it every such Service gets a Warning
// SyncLoadBalancerFailed naming what is missing (the event recorder folds
// the retries into one Event with a count), and nodes and routes are not
// affected. Nothing is ever deleted on this uncertainty: a Service whose
// status shows a load balancer (made before, or by the upstream CCM) keeps
// its finalizer until the load balancers can be reached again.
type noLoadBalancers struct {
	why error
}

var _ cloudprovider.LoadBalancer = (*noLoadBalancers)(nil)

func (n *noLoadBalancers) err() error {
	return fmt.Errorf("the cloud cannot serve Services of type LoadBalancer: %w", n.why)
}

// hadLoadBalancer reports whether the Service's status shows an address
// some load balancer gave it.
func hadLoadBalancer(svc *corev1.Service) bool {
	return len(svc.Status.LoadBalancer.Ingress) > 0
}

func (n *noLoadBalancers) GetLoadBalancer(_ context.Context, _ string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	if hadLoadBalancer(svc) {
		return nil, false, n.err()
	}
	return nil, false, nil
}

func (n *noLoadBalancers) GetLoadBalancerName(_ context.Context, clusterName string, svc *corev1.Service) string {
	return loadbalancer.LoadBalancerName(clusterName, loadbalancer.ServiceRef{Namespace: svc.Namespace, Name: svc.Name})
}

func (n *noLoadBalancers) EnsureLoadBalancer(context.Context, string, *corev1.Service, []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	return nil, n.err()
}

func (n *noLoadBalancers) UpdateLoadBalancer(context.Context, string, *corev1.Service, []*corev1.Node) error {
	return n.err()
}

func (n *noLoadBalancers) EnsureLoadBalancerDeleted(_ context.Context, _ string, svc *corev1.Service) error {
	if hadLoadBalancer(svc) {
		return n.err()
	}
	return nil
}
