package loadbalancer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"

	"github.com/stackward/stackward/pkg/loadbalancer"
)

// syncAs runs Ensure for cluster name clusterName until it succeeds, as
// the service controller does, and returns the in-progress messages it
// answered (each becomes an Event on the Service).
func syncAs(t *testing.T, m *loadbalancer.Manager, clusterName string, svc *corev1.Service) []string {
	t.Helper()
	var msgs []string
	for range 100 {
		_, err := m.Ensure(context.Background(), clusterName, svc, simNodes("10.0.0.11", "10.0.0.12"))
		var re *api.RetryError
		switch {
		case err == nil:
			return msgs
		case errors.As(err, &re):
			msgs = append(msgs, err.Error())
			time.Sleep(re.RetryAfter())
		default:
			t.Fatalf("Ensure %s as cluster %q: %v", svc.Name, clusterName, err)
		}
	}
	t.Fatalf("Ensure %s as cluster %q never converged", svc.Name, clusterName)
	return nil
}

// lbPicture is everything that carries a name of a load balancer: its
// own name, description and tags, and its children's names and tags.
type lbPicture struct {
	name, description string
	tags              []string
	children          []string // "listener <name> <tags>", "pool <name>", "monitor <name>"
}

func pictureOf(t *testing.T, env simEnv, id string) lbPicture {
	t.Helper()
	ctx := context.Background()
	lb, err := loadbalancers.Get(ctx, env.octavia, id).Extract()
	if err != nil {
		t.Fatal(err)
	}
	p := lbPicture{name: lb.Name, description: lb.Description, tags: slices.Sorted(slices.Values(lb.Tags))}
	lp, err := listeners.List(env.octavia, listeners.ListOpts{LoadbalancerID: id}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := listeners.ExtractListeners(lp)
	for _, l := range ls {
		p.children = append(p.children, fmt.Sprintf("listener %s %v", l.Name, slices.Sorted(slices.Values(l.Tags))))
	}
	pp, err := pools.List(env.octavia, pools.ListOpts{LoadbalancerID: id}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := pools.ExtractPools(pp)
	for _, pl := range ps {
		p.children = append(p.children, "pool "+pl.Name)
		if pl.MonitorID != "" {
			mon, err := monitors.Get(ctx, env.octavia, pl.MonitorID).Extract()
			if err != nil {
				t.Fatal(err)
			}
			p.children = append(p.children, "monitor "+mon.Name)
		}
	}
	slices.Sort(p.children)
	return p
}

func lbIDByName(t *testing.T, env simEnv, name, uid string) string {
	t.Helper()
	found, err := env.m.Octavia.FindLoadBalancers(context.Background(), name, loadbalancer.ClusterTag(uid))
	if err != nil || len(found) != 1 {
		t.Fatalf("load balancer %q of cluster %s: %v %v", name, uid, found, err)
	}
	return found[0].ID
}

// --cluster-name changes from "old" to "new". Another cluster also
// called "old" (UID uid-2) has a Service of the same namespace and name in
// the same project, and an operator made a load balancer with the old
// name by hand. Only this cluster's load balancer is renamed, with its
// listeners, pools, monitors, description and the Service tags of the
// Service sharing it; one RenamedLoadBalancer Event says old -> new;
// nothing is created; the others are untouched; and once renamed a sync
// makes one load-balancer lookup, as before the change.
func TestAClusterNameChangeRenamesOnlyThisClustersLoadBalancers(t *testing.T) {
	env := newSimEnv(t, 20*time.Millisecond)
	env.m.Requeue = 20 * time.Millisecond
	env.m.SyncWait = -1 // each sync below is one step, as the test counts them
	ctx := context.Background()
	monitored := map[string]string{loadbalancer.AnnotationHealthMonitor: "true"}
	web := simService("web", 80, 30080, monitored)
	syncAs(t, env.m, "old", web)
	ourID := lbIDByName(t, env, "kube_service_old_shop_web", "uid-1")
	sharer := simService("api", 8080, 30880, map[string]string{loadbalancer.AnnotationLoadBalancerID: ourID})
	syncAs(t, env.m, "old", sharer)

	// The other cluster of the same name, on the same project.
	other := connectSim(t, env.sim, env.authURL)
	other.m.ClusterUID = func(context.Context) (string, error) { return "uid-2", nil }
	other.m.Requeue = 20 * time.Millisecond
	syncAs(t, other.m, "old", simService("web", 80, 30080, monitored))
	otherID := lbIDByName(t, env, "kube_service_old_shop_web", "uid-2")
	// The operator's, by hand, with the old name and no cluster's tag.
	op, err := loadbalancers.Create(ctx, env.octavia, loadbalancers.CreateOpts{Name: "kube_service_old_shop_web", VipSubnetID: env.subnetID,
		Description: "Kubernetes Service shop/web of cluster old (uid-1), managed by stackward", Tags: []string{"kube_service=shop/web", "kube_service_old_shop_api"}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	waitActive(t, env, op.ID)

	before := map[string]lbPicture{"other cluster's": pictureOf(t, env, otherID), "operator's": pictureOf(t, env, op.ID)}
	ours := pictureOf(t, env, ourID)
	if !slices.ContainsFunc(ours.children, func(c string) bool { return strings.HasPrefix(c, "monitor ") }) {
		t.Fatalf("web's load balancer has no health monitor to rename: %v", ours.children)
	}

	env.sim.ResetCalls()
	msgs := syncAs(t, env.m, "new", web)
	var renamed []string
	for _, m := range msgs {
		if loadbalancer.ProgressReason(m) == loadbalancer.ReasonRenamed {
			renamed = append(renamed, m)
		}
	}
	if len(renamed) != 1 || !strings.Contains(renamed[0], "kube_service_old_shop_web -> kube_service_new_shop_web") {
		t.Errorf("%s events %q, want one saying kube_service_old_shop_web -> kube_service_new_shop_web; all: %q", loadbalancer.ReasonRenamed, renamed, msgs)
	}
	if n := env.sim.Calls()["load-balancer.loadbalancers.create"]; n != 0 {
		t.Errorf("%d load balancers created after the cluster-name change, want 0 (renamed, not replaced)", n)
	}

	got := pictureOf(t, env, ourID)
	if got.name != "kube_service_new_shop_web" {
		t.Errorf("name %q, want kube_service_new_shop_web", got.name)
	}
	if !strings.Contains(got.description, "of cluster new (uid-1)") {
		t.Errorf("description %q, want the new cluster name", got.description)
	}
	for _, tag := range []string{"kube_cluster_uid=uid-1", "kube_service=shop/web", "kube_service_new_shop_api"} {
		if !slices.Contains(got.tags, tag) {
			t.Errorf("tags %v lack %s", got.tags, tag)
		}
	}
	for _, s := range append(slices.Clone(got.tags), got.children...) {
		if strings.Contains(s, "kube_service_old_") {
			t.Errorf("still the old cluster name after the rename: %q (tags %v, children %v)", s, got.tags, got.children)
		}
	}
	if len(got.children) != len(ours.children) {
		t.Errorf("children %v, want as many as before (%v)", got.children, ours.children)
	}
	for what, b := range before {
		id := otherID
		if what == "operator's" {
			id = op.ID
		}
		if a := pictureOf(t, env, id); !samePicture(a, b) {
			t.Errorf("the %s load balancer changed: %+v, was %+v", what, a, b)
		}
	}

	// The Service sharing it is still on it, under its new tag.
	syncAs(t, env.m, "new", sharer)
	if lbs := allLBs(t, env); len(lbs) != 3 {
		t.Errorf("%d load balancers, want 3 (ours, the other cluster's, the operator's)", len(lbs))
	}
	// Renamed: a sync finds it by its name again, with one lookup.
	env.sim.ResetCalls()
	if msgs := syncAs(t, env.m, "new", web); len(msgs) != 0 {
		t.Errorf("a sync after the rename answered %q, want nothing to do", msgs)
	}
	if n := env.sim.Calls()["load-balancer.loadbalancers.list"]; n != 1 {
		t.Errorf("%d load-balancer lists in a steady-state sync after the rename, want 1: %v", n, env.sim.Calls())
	}
	// A new Service costs no lookup for older names: one scan served them.
	env.sim.ResetCalls()
	if _, err := env.m.Ensure(ctx, "new", simService("fresh", 90, 30090, nil), simNodes("10.0.0.11", "10.0.0.12")); !errors.As(err, new(*api.RetryError)) {
		t.Fatalf("creating a new Service: %v, want a wait for Octavia", err)
	}
	if n := env.sim.Calls()["load-balancer.loadbalancers.list"]; n != 1 {
		t.Errorf("%d load-balancer lists to create a new Service after the rename, want 1: %v", n, env.sim.Calls())
	}
	// The other cluster still finds its own under the old name.
	if _, exists, err := other.m.Get(ctx, "old", simService("web", 80, 30080, monitored)); err != nil || !exists {
		t.Errorf("the other cluster's Get: exists %v, %v", exists, err)
	}
}

func samePicture(a, b lbPicture) bool {
	return a.name == b.name && a.description == b.description && slices.Equal(a.tags, b.tags) && slices.Equal(a.children, b.children)
}
