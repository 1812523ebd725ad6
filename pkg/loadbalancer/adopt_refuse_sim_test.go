package loadbalancer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"

	"github.com/stackward/stackward/pkg/loadbalancer"
)

// Load balancers that only look like the Service's are never adopted or
// deleted. Upstream's names and markers derive from the cluster name and
// the Service's namespace/name alone, so a second cluster of the same name
// in the project (still on the upstream CCM) makes the very same ones:
// only the Service's status.loadBalancer.ingress, which the service
// controller wrote, ties a load balancer to this Service of this cluster.
// Without it Ensure fails with an error naming the candidates (the service
// controller's Warning event on the Service) and creates nothing, Get says
// the Service has no load balancer and Delete touches nothing. A load
// balancer another cluster has tagged as its own plays no part at all.
func TestALoadBalancerThatIsNotCertainlyUpstreamsIsNeverAdoptedOrDeleted(t *testing.T) {
	handMade := "made by hand"
	for _, tc := range []struct {
		name     string
		make     []upstreamStyle
		adoptOff bool
		// status: the Service's published ingress; "first" stands for the
		// first load balancer's floating IP.
		status      string
		annotations func(made []upstreamLB) map[string]string
		// refused: Ensure fails with ErrNotAdopted naming every load
		// balancer made; otherwise the Service gets a new one of its own.
		refused bool
	}{
		{name: "another cluster's same-named load balancer with its cluster-UID tag is left alone",
			make: []upstreamStyle{{svc: "web", tags: []string{"kube_service_lab_shop_web", "kube_cluster_uid=uid-other"}}}},
		{name: "a second cluster of the same name on the upstream CCM: a new Service does not take its live load balancer",
			make: []upstreamStyle{{svc: "web"}}, refused: true},
		{name: "a namespace user's load-balancer-id naming the other cluster's load balancer is no evidence",
			make: []upstreamStyle{{svc: "web"}}, refused: true,
			annotations: func(made []upstreamLB) map[string]string {
				return map[string]string{loadbalancer.AnnotationLoadBalancerID: made[0].id}
			}},
		{name: "a Service whose status shows another address does not take it",
			make: []upstreamStyle{{svc: "web"}}, status: "198.51.100.77", refused: true},
		{name: "an operator's load balancer with the name but none of upstream's markers is refused, even when the status shows it",
			make: []upstreamStyle{{svc: "web", tags: []string{}, description: &handMade}}, status: "first", refused: true},
		{name: "two upstream load balancers for one Service are refused",
			make: []upstreamStyle{{svc: "web"}, {svc: "web"}}, refused: true},
		{name: "with adoption turned off the upstream load balancer is left alone",
			make: []upstreamStyle{{svc: "web"}}, adoptOff: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newSimEnv(t, 20*time.Millisecond)
			env.m.Requeue = 20 * time.Millisecond
			env.m.Config.AdoptUpstream = !tc.adoptOff
			var made []upstreamLB
			before := map[string][]string{}
			for _, u := range tc.make {
				lb := makeUpstreamLB(t, env, u)
				made = append(made, lb)
			}
			for _, lb := range allLBs(t, env) {
				before[lb.ID] = lb.Tags
			}
			var annotations map[string]string
			if tc.annotations != nil {
				annotations = tc.annotations(made)
			}
			svc := simService("web", 80, 30080, annotations)
			switch tc.status {
			case "":
			case "first":
				published(svc, made[0].fip)
			default:
				published(svc, tc.status)
			}
			ctx := context.Background()
			nodes := simNodes("10.0.0.11", "10.0.0.12")

			if tc.refused {
				_, err := env.m.Ensure(ctx, "lab", svc, nodes)
				assertNotAdopted(t, "Ensure", err, made)
				if n := len(allLBs(t, env)); n != len(made) {
					t.Errorf("%d load balancers after Ensure, want the %d there were", n, len(made))
				}
				if _, exists, err := env.m.Get(ctx, "lab", svc); err != nil || exists {
					t.Errorf("Get: exists %v, %v; want no load balancer of the Service's", exists, err)
				}
				if err := env.m.Delete(ctx, "lab", svc); err != nil {
					t.Errorf("Delete: %v, want nothing to do", err)
				}
			} else {
				st := ensure(t, env.m, svc, nodes)
				for _, u := range made {
					if len(st.Ingress) == 1 && st.Ingress[0].IP == u.fip {
						t.Errorf("the Service took the floating IP %s of a load balancer it does not own", u.fip)
					}
				}
				if n := len(allLBs(t, env)); n != len(made)+1 {
					t.Errorf("%d load balancers, want the %d there were and the Service's own", n, len(made))
				}
				deleteUntilDone(t, env.m, svc)
				time.Sleep(100 * time.Millisecond) // the Service's own goes; the others must stay
			}
			for _, u := range made {
				lb, err := loadbalancers.Get(ctx, env.octavia, u.id).Extract()
				if err != nil {
					t.Errorf("load balancer %s: %v; want it untouched", u.id, err)
					continue
				}
				if !slices.Equal(lb.Tags, before[u.id]) {
					t.Errorf("tags of %s changed from %v to %v", u.id, before[u.id], lb.Tags)
				}
				if got := fipState(t, env, u.fipID); got != "attached to "+u.vipPort {
					t.Errorf("floating IP %s of %s: %s, want still attached", u.fip, u.id, got)
				}
			}
		})
	}
}

func assertNotAdopted(t *testing.T, what string, err error, made []upstreamLB) {
	t.Helper()
	if !errors.Is(err, loadbalancer.ErrNotAdopted) {
		t.Fatalf("%s: %v, want ErrNotAdopted", what, err)
	}
	for _, u := range made {
		if !strings.Contains(err.Error(), u.id) {
			t.Errorf("%s: %q does not name candidate %s", what, err, u.id)
		}
	}
}
