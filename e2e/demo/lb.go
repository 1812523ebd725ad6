package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
)

// lbSummary is the demo's LoadBalancer Service.
type lbSummary struct {
	Service string `json:"service"`
	// Address is the Service's ingress IP; empty when it got none.
	Address string `json:"address,omitempty"`
	// Seconds from creating the Service to its address; -1: none.
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
}

const lbService = "demo-web"

// loadBalancer creates a Service of type LoadBalancer and waits for
// stackward-ccm's service controller to give it an address from Octavia.
func (d *demo) loadBalancer(ctx context.Context, timeout time.Duration) *lbSummary {
	s := &lbSummary{Service: "default/" + lbService, Seconds: -1}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: lbService, Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": lbService},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	start := time.Now()
	if _, err := d.cp.Admin.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		s.Error = err.Error()
		d.out.say("service %s: %v", s.Service, err)
		return s
	}
	d.out.say("service %s: created (type LoadBalancer, port 80)", s.Service)
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := d.cp.Admin.CoreV1().Services("default").Get(ctx, lbService, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, in := range got.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				s.Address = in.IP
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		s.Error = fmt.Sprintf("no address after %s", timeout)
		d.out.say("service %s: no address after %s (kubectl describe service %s)", s.Service, timeout, lbService)
		return s
	}
	s.Seconds = time.Since(start).Seconds()
	d.out.say("service %s: EXTERNAL-IP %s from Octavia (simulated) in %.1fs", s.Service, s.Address, s.Seconds)
	return s
}
