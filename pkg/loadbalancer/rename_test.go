package loadbalancer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// What a cluster-name change renames, read from a load balancer alone.
func TestRenamingOf(t *testing.T) {
	web := ServiceRef{Namespace: "shop", Name: "web"}
	id := Identity{ClusterName: "new", ClusterUID: testUID}
	oldID := Identity{ClusterName: "old", ClusterUID: testUID}
	for _, tc := range []struct {
		name     string
		lb       LoadBalancer
		wantName string // "": not renamed
		wantErr  error
		wantDesc string
		wantTags []string
	}{
		{name: "ours under the old name: name, description and Service tags get the new cluster name",
			lb: LoadBalancer{Name: "kube_service_old_shop_web", Description: loadBalancerDescription(oldID, web),
				Tags: []string{ClusterTag(testUID), serviceTag(web), "kube_service_old_shop_web", "kube_service_old_shop_api", "kube_shared_with=*"}},
			wantName: "kube_service_new_shop_web", wantDesc: loadBalancerDescription(id, web),
			wantTags: []string{ClusterTag(testUID), serviceTag(web), "kube_service_new_shop_web", "kube_service_new_shop_api", "kube_shared_with=*"}},
		{name: "adopted from the upstream CCM: its description stays upstream's, with the new cluster name",
			lb: LoadBalancer{Name: "kube_service_old_shop_web", Description: upstreamDescription("old", web),
				Tags: []string{"kube_service_old_shop_web", ClusterTag(testUID), serviceTag(web), adoptedTag}},
			wantName: "kube_service_new_shop_web", wantDesc: upstreamDescription("new", web),
			wantTags: []string{"kube_service_new_shop_web", ClusterTag(testUID), serviceTag(web), adoptedTag}},
		{name: "a cluster name with underscores",
			lb:       LoadBalancer{Name: "kube_service_my_old_one_shop_web", Tags: []string{ClusterTag(testUID), serviceTag(web), "kube_service_my_old_one_shop_web"}},
			wantName: "kube_service_new_shop_web", wantTags: []string{ClusterTag(testUID), serviceTag(web), "kube_service_new_shop_web"}},
		{name: "a name shortened with a hash says no cluster name for sure: refused, nothing guessed",
			lb:      LoadBalancer{Name: LoadBalancerName(strings.Repeat("c", 250), web), Tags: []string{ClusterTag(testUID), serviceTag(web)}},
			wantErr: ErrNotRenamed},
		{name: "another cluster's, of the old name: never",
			lb: LoadBalancer{Name: "kube_service_old_shop_web", Tags: []string{ClusterTag("other-uid"), serviceTag(web)}}},
		{name: "an operator's, with the old name and no cluster's tag: never",
			lb: LoadBalancer{Name: "kube_service_old_shop_web", Tags: []string{serviceTag(web), "kube_service_old_shop_web"}}},
		{name: "ours, named for this cluster name already",
			lb: LoadBalancer{Name: "kube_service_new_shop_web", Tags: []string{ClusterTag(testUID), serviceTag(web)}}},
		{name: "ours with a name that says no cluster name: refused, nothing guessed",
			lb:      LoadBalancer{ID: "lb-1", Name: "renamed-by-hand", Tags: []string{ClusterTag(testUID), serviceTag(web)}},
			wantErr: ErrNotRenamed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := renamingOf(id, &tc.lb)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if tc.wantName == "" {
				if r != nil {
					t.Fatalf("renamed to %q, want left alone", r.newName)
				}
				return
			}
			if r == nil {
				t.Fatalf("not renamed, want %q", tc.wantName)
			}
			if r.newName != tc.wantName || !slices.Equal(r.tags, tc.wantTags) {
				t.Errorf("renamed to %q with tags %v, want %q with %v", r.newName, r.tags, tc.wantName, tc.wantTags)
			}
			if tc.wantDesc != "" && r.description != tc.wantDesc {
				t.Errorf("description %q, want %q", r.description, tc.wantDesc)
			}
		})
	}
}

// Children are named after the load balancer of the Service they serve:
// the creator's and a sharer's get the new cluster name, a name of
// someone else's choosing stays.
func TestRechild(t *testing.T) {
	r := &renaming{oldCluster: "old", newCl: "new", oldName: "kube_service_old_shop_web", newName: "kube_service_new_shop_web"}
	for in, want := range map[string]string{
		"listener_tcp_80_kube_service_old_shop_web":   "listener_tcp_80_kube_service_new_shop_web",
		"pool_0_kube_service_old_shop_web":            "pool_0_kube_service_new_shop_web",
		"monitor_udp_53_kube_service_old_shop_api":    "monitor_udp_53_kube_service_new_shop_api",
		"listener_tcp_80_kube_service_older_shop_web": "listener_tcp_80_kube_service_older_shop_web",
		"the operator's pool":                         "the operator's pool",
	} {
		if got := r.rechild(in); got != want {
			t.Errorf("rechild(%q) = %q, want %q", in, got, want)
		}
	}
}

// Get reports a load balancer under the old name and changes nothing; a
// Service of another namespace naming it in load-balancer-id does not
// rename it; a Service sharing it may be the first to sync, and renames it
// as its creator would.
func TestRenameGetChangesNothingAndASharerRenamesTheSharedLoadBalancer(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	ctx := context.Background()
	syncUntil := func(clusterName string, svc *corev1.Service) (reasons []string, err error) {
		for range 20 {
			_, err = m.Ensure(ctx, clusterName, svc, nodes("10.0.0.1"))
			if !isRetry(err) {
				return reasons, err
			}
			reasons = append(reasons, ProgressReason(err.Error()))
			if l := oct.only(); l != nil && l.lb.ProvisioningStatus != StatusActive {
				oct.setStatus(l.lb.ID, StatusActive) // Octavia finishes its work
			}
		}
		t.Fatalf("Ensure %s as %q never converged: %v", svc.Name, clusterName, err)
		return nil, nil
	}
	web := service()
	if _, err := syncUntil("old", web); err != nil {
		t.Fatal(err)
	}
	lb := oct.only()
	sharer := func(ns, name string) *corev1.Service {
		return service(func(s *corev1.Service) {
			s.Namespace, s.Name = ns, name
			s.Annotations[AnnotationLoadBalancerID] = lb.lb.ID
			s.Spec.Ports[0].Port, s.Spec.Ports[0].NodePort = 8080, 30880
		})
	}
	api := sharer("shop", "api")
	if _, err := syncUntil("old", api); err != nil {
		t.Fatal(err)
	}

	oct.resetCalls()
	if _, exists, err := m.Get(ctx, "new", web); err != nil || !exists {
		t.Fatalf("Get under the new name: exists %v, %v; want the load balancer reported", exists, err)
	}
	if w := oct.writes(); len(w) != 0 {
		t.Errorf("Get changed %v", w)
	}
	if _, err := syncUntil("new", sharer("elsewhere", "intruder")); err == nil {
		t.Error("a Service of another namespace joined web's load balancer")
	}
	if w := oct.writes(); len(w) != 0 || lb.lb.Name != "kube_service_old_shop_web" {
		t.Errorf("a Service of another namespace renamed or changed the load balancer: %v, name %q", w, lb.lb.Name)
	}

	reasons, err := syncUntil("new", api)
	if err != nil {
		t.Fatal(err)
	}
	if lb.lb.Name != "kube_service_new_shop_web" || !slices.Contains(lb.lb.Tags, "kube_service_new_shop_api") {
		t.Errorf("after the sharer's sync: name %q tags %v, want kube_service_new_shop_web with kube_service_new_shop_api", lb.lb.Name, lb.lb.Tags)
	}
	if n := slices.Index(reasons, ReasonRenamed); n < 0 || slices.Contains(reasons[n+1:], ReasonRenamed) {
		t.Errorf("reasons %v, want %s once", reasons, ReasonRenamed)
	}
	if _, err := syncUntil("new", web); err != nil {
		t.Errorf("web after its load balancer was renamed by its sharer: %v", err)
	}
}
