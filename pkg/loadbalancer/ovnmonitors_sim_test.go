package loadbalancer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// syncUntilDone runs Ensure until it succeeds, as the service controller
// does, and returns the in-progress reasons it answered (which become the
// Service's Normal Events) and the errors that were no RetryError. It
// fails after more than allowErrors of those, or when it never converges
// (a wedged load balancer stays PENDING_UPDATE).
func syncUntilDone(t *testing.T, m *loadbalancer.Manager, svc *corev1.Service, allowErrors int) (reasons []string, failures []error) {
	t.Helper()
	nodes := simNodes("10.0.0.11", "10.0.0.12")
	for range 80 {
		_, err := m.Ensure(context.Background(), "lab", svc, nodes)
		var re *api.RetryError
		switch {
		case err == nil:
			return reasons, failures
		case errors.As(err, &re):
			reasons = append(reasons, loadbalancer.ProgressReason(err.Error()))
			if loadbalancer.ProgressReason(err.Error()) == loadbalancer.ReasonRecreatingMonitors {
				t.Logf("event: %v", err)
			}
			time.Sleep(re.RetryAfter())
		default:
			failures = append(failures, err)
			if len(failures) > allowErrors {
				t.Fatalf("Ensure %s: %v", svc.Name, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Fatalf("Ensure %s never converged (a wedged load balancer stays PENDING_UPDATE)", svc.Name)
	return nil, nil
}

// With Octavia's OVN provider a listener created beside a health monitor
// of its protocol wedges the load balancer (cloudsim does as the real
// provider does). Stackward removes those monitors first, creates the
// listener, and brings every monitor back.
func TestOVNListenerAddedBesideAHealthMonitor(t *testing.T) {
	withMonitor := func(delay string) map[string]string {
		return map[string]string{loadbalancer.AnnotationHealthMonitor: "true", loadbalancer.AnnotationMonitorDelay: delay, loadbalancer.AnnotationMonitorTimeout: "3"}
	}
	for _, tc := range []struct {
		name string
		// add is the port added to web, or with shared the port of a
		// second Service that joins web's load balancer.
		add         corev1.ServicePort
		shared      bool
		fault       *cloudsim.FaultRule
		wantRemoved int // monitor deletes
	}{
		{name: "a TCP port added beside the TCP monitor: the monitor goes first and comes back",
			add: corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443}, wantRemoved: 1},
		{name: "a UDP port added beside only a TCP monitor: no monitor is touched",
			add: corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053}},
		{name: "a Service sharing the load balancer: the other Service's monitor goes and comes back with its settings",
			add: corev1.ServicePort{Name: "api", Protocol: corev1.ProtocolTCP, Port: 8080, NodePort: 30880}, shared: true, wantRemoved: 1},
		{name: "a listener create that fails after the monitor went: the monitor comes back at once, goes again for the next attempt, and comes back after it",
			add:   corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443},
			fault: &cloudsim.FaultRule{Service: cloudsim.ServiceLoadBalancer, Operation: "listeners.create", Status: 500, Times: 1}, wantRemoved: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newSimEnv(t, 20*time.Millisecond)
			env.m.Requeue = 20 * time.Millisecond
			env.m.Config.LBProvider = loadbalancer.ProviderOVN
			ctx := context.Background()
			web := simService("web", 80, 30080, withMonitor("7"))
			syncUntilDone(t, env.m, web, 0)
			found, err := env.m.Octavia.FindLoadBalancers(ctx, "kube_service_lab_shop_web", loadbalancer.ClusterTag("uid-1"))
			if err != nil || len(found) != 1 {
				t.Fatalf("load balancer of web: %v %v", found, err)
			}
			lbID := found[0].ID
			if tc.fault != nil {
				if err := env.sim.SetFault(*tc.fault); err != nil {
					t.Fatal(err)
				}
			}
			env.sim.ResetCalls()
			svc := web
			if tc.shared {
				svc = simService("api", 8080, 30880, withMonitor("9"))
				svc.Annotations[loadbalancer.AnnotationLoadBalancerID] = lbID
				svc.Spec.Ports = []corev1.ServicePort{tc.add}
			} else {
				web.Spec.Ports = append(web.Spec.Ports, tc.add)
			}
			allow := 0
			if tc.fault != nil {
				allow = 1
			}
			reasons, failures := syncUntilDone(t, env.m, svc, allow)
			if tc.fault != nil && len(failures) != 1 {
				t.Errorf("the injected listener create failure was not reported: %v", failures)
			}

			calls := env.sim.Calls()
			if got := calls["load-balancer.healthmonitors.delete"]; got != tc.wantRemoved {
				t.Errorf("%d monitor deletes, want %d (calls %v)", got, tc.wantRemoved, calls)
			}
			events := strings.Join(reasons, " ")
			if sawEvent := strings.Contains(events, loadbalancer.ReasonRecreatingMonitors); sawEvent != (tc.wantRemoved > 0) {
				t.Errorf("in-progress reasons %q: want %s exactly when a monitor was removed", events, loadbalancer.ReasonRecreatingMonitors)
			}
			// The last change settles after the sync that made it.
			deadline := time.Now().Add(5 * time.Second)
			for {
				lb, err := loadbalancers.Get(ctx, env.octavia, lbID).Extract()
				if err != nil {
					t.Fatal(err)
				}
				if lb.ProvisioningStatus == "ACTIVE" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("load balancer is %s, want ACTIVE", lb.ProvisioningStatus)
				}
				time.Sleep(20 * time.Millisecond)
			}
			lpage, err := listeners.List(env.octavia, listeners.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ls, _ := listeners.ExtractListeners(lpage)
			ports := map[int]bool{}
			for _, l := range ls {
				ports[l.ProtocolPort] = l.ProvisioningStatus == "ACTIVE"
			}
			if !ports[80] || !ports[int(tc.add.Port)] {
				t.Errorf("listeners (port: ACTIVE) %v, want 80 and %d ACTIVE", ports, tc.add.Port)
			}
			// Every pool has its monitor again, with the settings its
			// Service asked for.
			ppage, err := pools.List(env.octavia, pools.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ps, _ := pools.ExtractPools(ppage)
			mpage, err := monitors.List(env.octavia, monitors.ListOpts{}).AllPages(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ms, _ := monitors.ExtractMonitors(mpage)
			delays := map[string]int{}
			for _, m := range ms {
				for _, p := range m.Pools {
					delays[p.ID] = m.Delay
				}
			}
			wantDelay := map[string]int{"kube_service_lab_shop_web": 7, "kube_service_lab_shop_api": 9}
			if len(ps) != 2 {
				t.Fatalf("%d pools, want 2", len(ps))
			}
			for _, p := range ps {
				owner := "kube_service_lab_shop_web"
				if strings.Contains(p.Name, "shop_api") {
					owner = "kube_service_lab_shop_api"
				}
				if d, ok := delays[p.ID]; !ok || d != wantDelay[owner] {
					t.Errorf("pool %s: monitor delay %d (present %v), want a monitor with delay %d", p.Name, d, ok, wantDelay[owner])
				}
			}
		})
	}
}

// Two TCP pools with monitors: whichever monitor is not on the first pool
// (by ID) cannot be deleted without wedging its pool (the provider's
// hm_delete reports the first pool ACTIVE), so neither a TCP listener can
// be added nor the monitors turned off: refused, with nothing changed.
func TestOVNChangeRefusedWhenAMonitorCannotBeRemoved(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*corev1.Service)
		want   string
	}{
		{"a TCP port added", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443})
		}, "all its ports at once"},
		{"the health monitors turned off", func(s *corev1.Service) { s.Annotations[loadbalancer.AnnotationHealthMonitor] = "false" },
			"Keep the monitor"},
	} {
		t.Run(tc.name, func(t *testing.T) { refusedOnOVN(t, tc.change, tc.want) })
	}
}

func refusedOnOVN(t *testing.T, change func(*corev1.Service), advice string) {
	env := newSimEnv(t, 20*time.Millisecond)
	env.m.Requeue = 20 * time.Millisecond
	env.m.Config.LBProvider = loadbalancer.ProviderOVN
	web := simService("web", 80, 30080, map[string]string{loadbalancer.AnnotationHealthMonitor: "true"})
	web.Spec.Ports = append(web.Spec.Ports, corev1.ServicePort{Name: "alt", Protocol: corev1.ProtocolTCP, Port: 81, NodePort: 30081})
	syncUntilDone(t, env.m, web, 0)
	time.Sleep(100 * time.Millisecond) // the last monitor create settles
	env.sim.ResetCalls()
	change(web)
	_, err := env.m.Ensure(context.Background(), "lab", web, simNodes("10.0.0.11", "10.0.0.12"))
	if !errors.Is(err, loadbalancer.ErrOVNMonitorWedge) {
		t.Fatalf("Ensure = %v, want a refusal (ErrOVNMonitorWedge)", err)
	}
	var re *api.RetryError
	if errors.As(err, &re) {
		t.Errorf("the refusal is a RetryError (a Normal Event): %v", err)
	}
	for _, want := range []string{"PENDING_UPDATE for good", "nothing was changed", advice} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the Event's message %q does not say %q", err, want)
		}
	}
	for op, n := range env.sim.Calls() {
		if strings.HasSuffix(op, ".create") || strings.HasSuffix(op, ".delete") || strings.HasSuffix(op, ".update") || strings.HasSuffix(op, "batch_update") {
			t.Errorf("a refused change made %d %s calls", n, op)
		}
	}
}
