package app

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	v1core "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// The messages the service controller records, around errors worded as
// pkg/loadbalancer words them (its own test checks that ProgressReason
// reads what notReady writes).
const (
	pendingCreate = "Error syncing load balancer: failed to ensure load balancer: load balancer kube_service_lab_shop_web (lb-1) is PENDING_CREATE (in progress, not a failure: WaitingForOctavia; checking again in 5s)"
	queued        = "Error syncing load balancer: failed to ensure load balancer: load balancer kube_service_lab_shop_web (lb-1): 2 more changes queued (in progress, not a failure: ApplyingLoadBalancerChanges; checking again in 5s)"
	nodesQueued   = "Error updating load balancer with new hosts [node-1 node-2] [node names limited, total number of nodes: 2], error: load balancer kube_service_lab_shop_web: 1 more changes queued (in progress, not a failure: ApplyingLoadBalancerChanges; checking again in 5s)"
	deleting      = "Error deleting load balancer: load balancer kube_service_lab_shop_web (lb-1) is PENDING_UPDATE; deleting it when it settles (in progress, not a failure: WaitingForOctavia; checking again in 5s)"
	renaming      = "Error syncing load balancer: failed to ensure load balancer: load balancer kube_service_old_shop_web (lb-1) is being renamed kube_service_new_shop_web for cluster name \"new\": rename listener l-1 to listener_tcp_80_kube_service_new_shop_web; 1 more changes queued (in progress, not a failure: RenamingLoadBalancer; checking again in 5s)"
	renamed       = "Error syncing load balancer: failed to ensure load balancer: load balancer kube_service_old_shop_web (lb-1) renamed kube_service_old_shop_web -> kube_service_new_shop_web: the cluster name changed from \"old\" to \"new\" (in progress, not a failure: RenamedLoadBalancer; checking again in 5s)"
	quotaFailure  = "Error syncing load balancer: failed to ensure load balancer: create load balancer \"kube_service_lab_shop_web\": Quota has been met for resources: LoadBalancer"
)

type recorded struct{ typ, reason, msg string }

func TestProgressEvents(t *testing.T) {
	for _, tc := range []struct {
		name        string
		events      []recorded
		wantWarning []string // reasons
		wantNormal  map[string]bool
	}{{
		name: "a Service created, updated and deleted without faults produces no Warning",
		events: []recorded{
			{corev1.EventTypeNormal, "EnsuringLoadBalancer", "Ensuring load balancer"},
			{corev1.EventTypeWarning, "SyncLoadBalancerFailed", pendingCreate},
			{corev1.EventTypeNormal, "EnsuringLoadBalancer", "Ensuring load balancer"},
			{corev1.EventTypeNormal, "EnsuredLoadBalancer", "Ensured load balancer"},
			{corev1.EventTypeNormal, "EnsuringLoadBalancer", "Ensuring load balancer"},
			{corev1.EventTypeWarning, "SyncLoadBalancerFailed", queued},
			{corev1.EventTypeNormal, "EnsuredLoadBalancer", "Ensured load balancer"},
			{corev1.EventTypeWarning, "UpdateLoadBalancerFailed", nodesQueued},
			{corev1.EventTypeNormal, "UpdatedLoadBalancer", "Updated load balancer with new hosts"},
			{corev1.EventTypeNormal, "DeletingLoadBalancer", "Deleting load balancer"},
			{corev1.EventTypeWarning, "DeleteLoadBalancerFailed", deleting},
			{corev1.EventTypeNormal, "DeletedLoadBalancer", "Deleted load balancer"},
		},
		wantNormal: map[string]bool{"WaitingForOctavia": true, "ApplyingLoadBalancerChanges": true, "EnsuredLoadBalancer": true, "DeletedLoadBalancer": true},
	}, {
		name: "a load balancer renamed after a --cluster-name change: Normal Events, the last one RenamedLoadBalancer",
		events: []recorded{
			{corev1.EventTypeNormal, "EnsuringLoadBalancer", "Ensuring load balancer"},
			{corev1.EventTypeWarning, "SyncLoadBalancerFailed", renaming},
			{corev1.EventTypeNormal, "EnsuringLoadBalancer", "Ensuring load balancer"},
			{corev1.EventTypeWarning, "SyncLoadBalancerFailed", renamed},
			{corev1.EventTypeNormal, "EnsuredLoadBalancer", "Ensured load balancer"},
		},
		wantNormal: map[string]bool{"RenamingLoadBalancer": true, "RenamedLoadBalancer": true, "EnsuredLoadBalancer": true},
	}, {
		name:        "a real failure stays a Warning",
		events:      []recorded{{corev1.EventTypeWarning, "SyncLoadBalancerFailed", quotaFailure}},
		wantWarning: []string{"SyncLoadBalancerFailed"},
	}, {
		name: "a failure after many in-progress steps, aggregated into one Event, is a Warning again",
		events: append(countdown(12),
			recorded{corev1.EventTypeWarning, "SyncLoadBalancerFailed", quotaFailure}),
		wantWarning: []string{"SyncLoadBalancerFailed"},
		wantNormal:  map[string]bool{"ApplyingLoadBalancerChanges": true},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			b := record.NewBroadcaster()
			defer b.Shutdown()
			b.StartRecordingToSink(&v1core.EventSinkImpl{Interface: progressClient{client}.CoreV1().Events("")})
			rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "service-controller"})
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1"}}
			for i, e := range tc.events {
				rec.Event(svc, e.typ, e.reason, e.msg)
				// Distinct timestamps keep the recorder's order.
				if i%5 == 4 {
					time.Sleep(time.Millisecond)
				}
			}
			var warnings []string
			normal := map[string]bool{}
			last := ""
			err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
				list, err := client.CoreV1().Events("shop").List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, err
				}
				warnings, normal = nil, map[string]bool{}
				total := 0
				for _, ev := range list.Items {
					total += int(max(ev.Count, 1))
					if ev.Type == corev1.EventTypeWarning {
						warnings = append(warnings, ev.Reason)
					} else {
						normal[ev.Reason] = true
					}
				}
				last = fmt.Sprint(list.Items)
				return total >= len(tc.events) || (len(tc.wantWarning) > 0 && len(warnings) == len(tc.wantWarning)), nil
			})
			if err != nil {
				t.Fatalf("events not recorded: %v (%s)", err, last)
			}
			if fmt.Sprint(warnings) != fmt.Sprint(tc.wantWarning) && !(len(warnings) == 0 && len(tc.wantWarning) == 0) {
				t.Errorf("Warning reasons %v, want %v", warnings, tc.wantWarning)
			}
			for r := range tc.wantNormal {
				if !normal[r] {
					t.Errorf("no Normal event %s among %v", r, normal)
				}
			}
		})
	}
}

// countdown is n in-progress Events with distinct messages: from the
// tenth on, the recorder aggregates them into one Event it patches.
func countdown(n int) []recorded {
	out := make([]recorded, n)
	for i := range out {
		out[i] = recorded{corev1.EventTypeWarning, "SyncLoadBalancerFailed",
			strings.Replace(queued, "2 more changes", strconv.Itoa(n-i)+" more changes", 1)}
	}
	return out
}

func TestClassifyStripsTheControllersErrorPrefix(t *testing.T) {
	typ, reason, msg := classify(corev1.EventTypeWarning, "SyncLoadBalancerFailed", pendingCreate)
	want := "load balancer kube_service_lab_shop_web (lb-1) is PENDING_CREATE (in progress, not a failure: WaitingForOctavia; checking again in 5s)"
	if typ != corev1.EventTypeNormal || reason != "WaitingForOctavia" || msg != want {
		t.Errorf("classify = %s %s %q, want Normal WaitingForOctavia %q", typ, reason, msg, want)
	}
}
