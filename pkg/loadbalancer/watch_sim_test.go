package loadbalancer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cloud-provider/api"

	"github.com/stackward/stackward/internal/cloudsim"
)

// Eight Services created at once wait for Octavia together: while they
// wait, their rechecks read one shared view of the cluster's load
// balancers, so the list calls grow with the rechecks of one Service, not
// with the number of Services (one list each per recheck, before).
func TestServicesWaitingTogetherShareOneLookPerRecheck(t *testing.T) {
	const services = 8
	env := newSimEnv(t, 1500*time.Millisecond)
	env.sim.ResetCalls()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rechecks := make([]int, services)
	var wg sync.WaitGroup
	errs := make(chan error, services)
	for i := range services {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: fmt.Sprintf("web-%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, err := env.m.Ensure(ctx, "lab", svc, benchNodes)
				var re *api.RetryError
				switch {
				case err == nil:
					return
				case errors.As(err, &re):
					if !strings.Contains(err.Error(), "WaitingForOctavia") {
						errs <- fmt.Errorf("%s: %w, want only waits for Octavia", svc.Name, err)
						return
					}
					rechecks[i]++
					time.Sleep(re.RetryAfter())
				default:
					errs <- fmt.Errorf("%s: %w", svc.Name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	most := 0
	for _, n := range rechecks {
		most = max(most, n)
	}
	if most < 4 {
		t.Fatalf("at most %d rechecks for a 1.5 s create: the Services were not brought back soon", most)
	}
	calls := env.sim.Calls()
	lists, gets := calls[cloudsim.ServiceLoadBalancer+".loadbalancers.list"], calls[cloudsim.ServiceLoadBalancer+".loadbalancers.get"]
	// Each Service lists by its name once to create and once when its
	// load balancer is ACTIVE; the rechecks share one list each, plus
	// slack for Services that come back a little apart.
	if limit := 2*services + 2*most; lists > limit || gets > 0 {
		t.Errorf("%d list and %d get calls for %d Services rechecked up to %d times, want at most %d lists and no gets", lists, gets, services, most, limit)
	}
	all, _ := octaviaCalls(env.sim)
	t.Logf("%d Services: %d rechecks at most, %d Octavia list calls, %.1f Octavia calls per Service", services, most, lists, float64(all)/services)
}

