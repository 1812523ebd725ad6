//go:build e2e

package loadbalancer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/internal/cloudsim"
)

// dropServices deletes a namespace's Services and strips their finalizers,
// so that a Service whose load balancer cannot be deleted (stuck in the
// simulator, which goes with the test) does not outlive the test.
func dropServices(t *testing.T, cp *framework.ControlPlane, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cp.Admin.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("list services: %v", err)
		return
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
	for _, s := range list.Items {
		_ = cp.Admin.CoreV1().Services(ns).Delete(ctx, s.Name, metav1.DeleteOptions{})
		_, _ = cp.Admin.CoreV1().Services(ns).Patch(ctx, s.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
}

func TestOneLoadBalancerStuckOrInErrorDoesNotStopOthers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// One service worker (the default): a worker held by the stuck load
	// balancer would stop every other Service.
	l := newLab(ctx, t, framework.SimCloudOptions{OctaviaDelay: time.Second}, "", []string{"--concurrent-service-syncs=1"}, "busy", 40, 2)
	cp, api := l.cp, l.api
	createNamespace(ctx, t, cp, "busy")
	t.Cleanup(func() { dropServices(t, cp, "busy") })

	waitLB := func(name, status string) {
		t.Helper()
		waitTree(ctx, t, api, 60*time.Second, name+" "+status, func(st *octaviaState) bool {
			return st.LBs[name].Status == status
		})
	}
	// The stuck one first: its create never settles.
	if err := api.sim.SetFault(cloudsim.FaultRule{Service: cloudsim.ServiceLoadBalancer, Operation: "provisioning", Hang: true, Times: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Admin.CoreV1().Services("busy").Create(ctx, lbService("busy", "stuck"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLB("kube_service_lab_busy_stuck", "PENDING_CREATE")
	// Past its settling time (the Octavia delay) it must still be pending:
	// the hanging rule has fired, and the next rule cannot hit it.
	time.Sleep(2500 * time.Millisecond)
	waitLB("kube_service_lab_busy_stuck", "PENDING_CREATE")
	api.sim.ClearFaults()
	if err := api.sim.SetFault(cloudsim.FaultRule{Service: cloudsim.ServiceLoadBalancer, Operation: "provisioning", Times: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Admin.CoreV1().Services("busy").Create(ctx, lbService("busy", "broken"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The provisioning fault fires on its settle; the CCM may replace the
	// load balancer in ERROR as soon as it sees it, so wait for the fault,
	// not for the state.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		uses := api.sim.FaultUses()
		return len(uses) == 0 || uses[0] > 0, nil
	}); err != nil {
		t.Fatalf("the provisioning fault never fired for kube_service_lab_busy_broken: %v", err)
	}
	api.sim.ClearFaults()

	t.Run("the other Services converge", func(t *testing.T) {
		start := time.Now()
		for i := 1; i <= 3; i++ {
			if _, err := cp.Admin.CoreV1().Services("busy").Create(ctx, lbService("busy", fmt.Sprintf("ok-%d", i)), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for i := 1; i <= 3; i++ {
			waitIngress(ctx, t, cp, "busy", fmt.Sprintf("ok-%d", i), 90*time.Second)
		}
		t.Logf("3 Services converged in %s next to a stuck and a failed load balancer", time.Since(start).Round(100*time.Millisecond))
	})

	t.Run("the failed one says why in an Event, and the stuck one has no ingress", func(t *testing.T) {
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			return strings.Contains(events(ctx, cp, "busy", "broken"), "provisioning status ERROR"), nil
		})
		if err != nil {
			t.Errorf("no Event naming the ERROR: %s", events(ctx, cp, "busy", "broken"))
		}
		// The failed one is recreated (annotations_more_test.go checks how).
		for _, name := range []string{"stuck"} {
			s, err := cp.Admin.CoreV1().Services("busy").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Status.LoadBalancer.Ingress) != 0 {
				t.Errorf("%s has ingress %v", name, s.Status.LoadBalancer.Ingress)
			}
		}
	})

	t.Run("an invalid annotation is an Event naming it, and changes nothing", func(t *testing.T) {
		svc := lbService("busy", "typo")
		svc.Annotations["loadbalancer.openstack.org/lb-method"] = "FASTEST"
		before, err := api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cp.Admin.CoreV1().Services("busy").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			e := events(ctx, cp, "busy", "typo")
			return strings.Contains(e, "loadbalancer.openstack.org/lb-method") && strings.Contains(e, "FASTEST"), nil
		})
		if err != nil {
			t.Errorf("no Event naming the annotation: %s", events(ctx, cp, "busy", "typo"))
		}
		after, err := api.state(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after.N != before.N {
			t.Errorf("load balancers: %d before, %d after", before.N, after.N)
		}
	})

	t.Run("the failed one is deleted with its Service", func(t *testing.T) {
		if err := cp.Admin.CoreV1().Services("busy").Delete(ctx, "broken", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitTree(ctx, t, api, 60*time.Second, "broken deleted", func(st *octaviaState) bool {
			_, ok := st.LBs["kube_service_lab_busy_broken"]
			return !ok
		})
	})
}
