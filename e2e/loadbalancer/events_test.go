//go:build e2e

package loadbalancer

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

// A Service's whole life without faults (create, a new port, a node
// joining, delete) goes through many in-progress syncs against an Octavia
// that takes a second per change; none of them may be a Warning.
func TestAServiceLifecycleWithoutFaultsRecordsNoWarning(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l := newLab(ctx, t, framework.SimCloudOptions{OctaviaDelay: time.Second}, "", nil, "ev", 190, 2)
	cp, api := l.cp, l.api
	createNamespace(ctx, t, cp, "calm")
	t.Cleanup(func() { dropServices(t, cp, "calm") })
	const name = "kube_service_lab_calm_web"

	svc := lbService("calm", "web")
	svc.Annotations["loadbalancer.openstack.org/enable-health-monitor"] = "true"
	if _, err := cp.Admin.CoreV1().Services("calm").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitIngress(ctx, t, cp, "calm", "web", 90*time.Second)

	s, err := cp.Admin.CoreV1().Services("calm").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(8443)})
	if _, err := cp.Admin.CoreV1().Services("calm").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitTree(ctx, t, api, 60*time.Second, "listener TCP/443", func(st *octaviaState) bool {
		lt, ok := st.LBs[name].Listeners["TCP/443"]
		return ok && len(lt.Members) == 2 && st.LBs[name].Status == "ACTIVE"
	})

	l.addNode(ctx, t, "ev-3", 193)
	waitTree(ctx, t, api, 90*time.Second, "members with ev-3", func(st *octaviaState) bool {
		for _, lt := range st.LBs[name].Listeners {
			if len(lt.Members) != 3 {
				return false
			}
		}
		return st.LBs[name].Status == "ACTIVE"
	})

	if err := cp.Admin.CoreV1().Services("calm").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Admin.CoreV1().Services("calm").Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("the Service kept its finalizer: %s", events(ctx, cp, "calm", "web"))
	}
	waitTree(ctx, t, api, 30*time.Second, "no load balancer", func(st *octaviaState) bool { return st.N == 0 })

	// The recorder writes Events asynchronously: the last one
	// (DeletedLoadBalancer) says they are all there.
	var list *corev1.EventList
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err = cp.Admin.CoreV1().Events("calm").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
		return err == nil && slices.ContainsFunc(list.Items, func(e corev1.Event) bool { return e.Reason == "DeletedLoadBalancer" }), nil
	}); err != nil {
		t.Fatalf("no DeletedLoadBalancer event: %v; events: %s", err, events(ctx, cp, "calm", "web"))
	}
	progress := 0
	for _, e := range list.Items {
		switch {
		case e.Type == corev1.EventTypeWarning:
			t.Errorf("Warning %s (x%d): %s", e.Reason, e.Count, e.Message)
		case e.Reason == "WaitingForOctavia" || e.Reason == "ApplyingLoadBalancerChanges":
			progress += int(max(e.Count, 1))
		}
	}
	// Octavia took a second per change: the syncs did see work in progress.
	if progress == 0 {
		t.Errorf("no in-progress Normal event; events: %s", events(ctx, cp, "calm", "web"))
	}
	t.Logf("%d in-progress steps recorded as Normal events", progress)
}
