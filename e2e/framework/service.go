package framework

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
)

// CreateNamespace creates a namespace unless it exists.
func (cp *ControlPlane) CreateNamespace(ctx context.Context, t testing.TB, name string) {
	t.Helper()
	_, err := cp.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// LBService is a Service of type LoadBalancer selecting app=name, with the
// given ports (80/TCP to 8080 when none).
func LBService(ns, name string, ports ...corev1.ServicePort) *corev1.Service {
	if len(ports) == 0 {
		ports = []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    ports,
		},
	}
}

// WaitIngress waits for the Service's status to have an ingress IP.
func (cp *ControlPlane) WaitIngress(ctx context.Context, t testing.TB, ns, name string, timeout time.Duration) *corev1.Service {
	t.Helper()
	var svc *corev1.Service
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		s, err := cp.Admin.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		svc = s
		return len(s.Status.LoadBalancer.Ingress) > 0 && s.Status.LoadBalancer.Ingress[0].IP != "", nil
	})
	if err != nil {
		t.Fatalf("service %s/%s got no ingress: %v; events: %s", ns, name, err, cp.EventsOf(ctx, ns, name))
	}
	return svc
}

// EventsOf lists the events of the object ns/name as "Reason: message".
func (cp *ControlPlane) EventsOf(ctx context.Context, ns, name string) string {
	list, err := cp.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	return strings.Join(out, "; ")
}
