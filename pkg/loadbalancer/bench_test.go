package loadbalancer_test

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cloud-provider/api"

	"github.com/stackward/stackward/internal/cloudsim"
)

// BenchmarkServicesToActive creates 100 Services' load balancers (one TCP
// port, two nodes) against a simulator whose Octavia stays PENDING for 2 s
// after every change, with 10 workers either way:
//   - stackward: Manager.Ensure driven like the service controller drives
//     it: one fully populated create, the worker freed at once
//     (RetryError) and the Service synced again after the requeue delay;
//   - serial: what CCMs commonly do, each object created in turn and the
//     worker polling (every 500 ms) for ACTIVE after each: load balancer,
//     listener, pool, then each member.
//
// It reports Octavia calls per Service and the seconds until every Service
// is done. Run with
//
//	go test -run '^$' -bench ServicesToActive -benchtime 1x ./pkg/loadbalancer/
func BenchmarkServicesToActive(b *testing.B) {
	const services, workers, delay = 100, 10, 2 * time.Second
	for _, approach := range []struct {
		name string
		run  func(ctx context.Context, env simEnv, svcs []*corev1.Service, workers int) error
	}{
		{"stackward", runManager},
		{"serial", runSerial},
	} {
		b.Run(approach.name, func(b *testing.B) {
			for range b.N {
				env := newSimEnv(b, delay)
				env.m.Requeue = delay
				svcs := make([]*corev1.Service, services)
				for i := range svcs {
					svcs[i] = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("svc-%03d", i)},
						Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
				}
				env.sim.ResetCalls()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
				start := time.Now()
				err := approach.run(ctx, env, svcs, workers)
				elapsed := time.Since(start)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				octavia := 0
				for k, n := range env.sim.Calls() {
					if strings.HasPrefix(k, cloudsim.ServiceLoadBalancer+".") {
						octavia += n
					}
				}
				b.ReportMetric(float64(octavia)/services, "octavia-calls/service")
				b.ReportMetric(elapsed.Seconds(), "s-to-all-active")
			}
		})
	}
}

var benchNodes = simNodes("10.0.0.11", "10.0.0.12")

// runManager drives Manager.Ensure with a delaying work queue and workers,
// as k8s.io/cloud-provider's service controller does.
func runManager(ctx context.Context, env simEnv, svcs []*corev1.Service, workers int) error {
	q := &queue{seen: map[int]bool{}}
	for i := range svcs {
		q.add(i, time.Now())
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(svcs))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i, ok := q.next(ctx)
				if !ok {
					return
				}
				_, err := env.m.Ensure(ctx, "bench", svcs[i], benchNodes)
				var re *api.RetryError
				switch {
				case err == nil:
					q.done()
				case errors.As(err, &re):
					q.add(i, time.Now().Add(re.RetryAfter()))
				default:
					errs <- fmt.Errorf("%s: %w", svcs[i].Name, err)
					q.done()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// runSerial creates each Service's objects one by one, holding a worker
// while it polls for ACTIVE after each.
func runSerial(ctx context.Context, env simEnv, svcs []*corev1.Service, workers int) error {
	c := env.octavia
	wait := func(id string) error {
		for {
			lb, err := loadbalancers.Get(ctx, c, id).Extract()
			if err != nil {
				return err
			}
			if lb.ProvisioningStatus == "ACTIVE" {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	one := func(svc *corev1.Service) error {
		lb, err := loadbalancers.Create(ctx, c, loadbalancers.CreateOpts{Name: "serial_" + svc.Name, VipSubnetID: env.subnetID}).Extract()
		if err != nil {
			return err
		}
		if err := wait(lb.ID); err != nil {
			return err
		}
		l, err := listeners.Create(ctx, c, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTCP, ProtocolPort: 80}).Extract()
		if err != nil {
			return err
		}
		if err := wait(lb.ID); err != nil {
			return err
		}
		p, err := pools.Create(ctx, c, pools.CreateOpts{ListenerID: l.ID, Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin}).Extract()
		if err != nil {
			return err
		}
		if err := wait(lb.ID); err != nil {
			return err
		}
		for _, n := range benchNodes {
			if _, err := pools.CreateMember(ctx, c, p.ID, pools.CreateMemberOpts{Address: n.Status.Addresses[0].Address, ProtocolPort: 30080}).Extract(); err != nil {
				return err
			}
			if err := wait(lb.ID); err != nil {
				return err
			}
		}
		return nil
	}
	work := make(chan *corev1.Service)
	errs := make(chan error, len(svcs))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for svc := range work {
				if err := one(svc); err != nil {
					errs <- fmt.Errorf("%s: %w", svc.Name, err)
				}
			}
		}()
	}
	for _, svc := range svcs {
		work <- svc
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

// queue is a minimal delaying work queue: an item is handed to one worker
// at a time, once due.
type queue struct {
	mu      sync.Mutex
	items   itemHeap
	seen    map[int]bool
	pending int
}

type item struct {
	i   int
	due time.Time
}

type itemHeap []item

func (h itemHeap) Len() int           { return len(h) }
func (h itemHeap) Less(a, b int) bool { return h[a].due.Before(h[b].due) }
func (h itemHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *itemHeap) Push(x any)        { *h = append(*h, x.(item)) }
func (h *itemHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (q *queue) add(i int, due time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.seen[i] {
		q.seen[i] = true
		q.pending++
	}
	heap.Push(&q.items, item{i, due})
}

func (q *queue) done() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending--
}

// next blocks until an item is due; false once every item is done.
func (q *queue) next(ctx context.Context) (int, bool) {
	for {
		q.mu.Lock()
		if q.pending == 0 {
			q.mu.Unlock()
			return 0, false
		}
		if q.items.Len() > 0 && !q.items[0].due.After(time.Now()) {
			it := heap.Pop(&q.items).(item)
			q.mu.Unlock()
			return it.i, true
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return 0, false
		case <-time.After(10 * time.Millisecond):
		}
	}
}
