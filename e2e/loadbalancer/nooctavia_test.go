//go:build e2e

package loadbalancer

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/internal/cloudsim"
)

// A cloud whose catalog has no load-balancer service: the CCM starts,
// initializes its nodes as ever, and a Service of type LoadBalancer gets
// one SyncLoadBalancerFailed Warning naming the missing service type (its
// retries folded into that Event's count), and can be deleted. (The
// service controller's own UnAvailableLoadBalancer Warning may come too
// when its node list lags the new node.)
func TestACloudWithoutOctaviaInItsCatalog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Not newLab: its API client would look Octavia up in the catalog.
	l := &lab{cp: framework.SharedControlPlane(t), nodes: map[string]*framework.Node{}, ips: map[string]string{},
		cloud: framework.StartSimCloud(t, framework.SimCloudOptions{WithoutServices: []string{cloudsim.ServiceLoadBalancer}})}
	l.conf = l.cloud.CloudConf(t, "")
	l.stop = startCCM(ctx, t, l.cp, l.conf)
	cp := l.cp

	t.Run("nodes are initialized as on any cloud", func(t *testing.T) {
		l.addNode(ctx, t, "nooct-1", 241) // waits for providerID, addresses and no uninitialized taint
		// Ready too, so that the service controller has a node to offer.
		if _, err := cp.WaitForNode(ctx, "nooct-1", 60*time.Second, func(n *corev1.Node) bool {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					return c.Status == corev1.ConditionTrue
				}
			}
			return false
		}); err != nil {
			t.Fatalf("node not Ready: %v", err)
		}
	})
	createNamespace(ctx, t, cp, "nooct")
	t.Cleanup(func() { dropServices(t, cp, "nooct") })

	t.Run("a Service gets one Warning naming the missing load-balancer service", func(t *testing.T) {
		if _, err := cp.Admin.CoreV1().Services("nooct").Create(ctx, lbService("nooct", "web"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		warnings := func() []corev1.Event {
			list, err := cp.Admin.CoreV1().Events("nooct").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,type=Warning,reason=SyncLoadBalancerFailed"})
			if err != nil {
				t.Fatal(err)
			}
			return list.Items
		}
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			return len(warnings()) > 0, nil
		})
		if err != nil {
			t.Fatalf("no Warning on the Service: %s", events(ctx, cp, "nooct", "web"))
		}
		// The service controller retries after 5 s, then 10 s: the
		// retries land on the same Event.
		var ws []corev1.Event
		for deadline := time.Now().Add(12 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
			if ws = warnings(); len(ws) != 1 {
				t.Fatalf("%d Warning Events, want one: %s", len(ws), events(ctx, cp, "nooct", "web"))
			}
		}
		w := ws[0]
		if w.Reason != "SyncLoadBalancerFailed" || !strings.Contains(w.Message, "cannot serve Services of type LoadBalancer") || !strings.Contains(w.Message, "load-balancer service") {
			t.Errorf("Warning %s: %q, want SyncLoadBalancerFailed naming the load-balancer service", w.Reason, w.Message)
		}
		t.Logf("Warning (count %d): %s", w.Count, w.Message)
		if s, err := cp.Admin.CoreV1().Services("nooct").Get(ctx, "web", metav1.GetOptions{}); err != nil || len(s.Status.LoadBalancer.Ingress) != 0 {
			t.Errorf("service status %+v, %v", s.Status.LoadBalancer, err)
		}
	})

	t.Run("the Service, never given a load balancer, can be deleted", func(t *testing.T) {
		if err := cp.Admin.CoreV1().Services("nooct").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := cp.Admin.CoreV1().Services("nooct").Get(ctx, "web", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatalf("the Service kept its finalizer: %s", events(ctx, cp, "nooct", "web"))
		}
	})
}
