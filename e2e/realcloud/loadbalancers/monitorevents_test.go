//go:build e2e

package loadbalancers

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// waitMonitorsRecreated waits for the Normal Event that says the
// Service's sync removed health monitors for a listener create on the OVN
// provider and re-creates them (pkg/loadbalancer/ovnmonitors.go), and
// checks that it says why.
func waitMonitorsRecreated(ctx context.Context, t *testing.T, cp *framework.ControlPlane, ns, name string) {
	t.Helper()
	var msg string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, nil
		}
		i := slices.IndexFunc(list.Items, func(e corev1.Event) bool {
			return e.Type == corev1.EventTypeNormal && e.Reason == loadbalancer.ReasonRecreatingMonitors
		})
		if i >= 0 {
			msg = list.Items[i].Message
		}
		return i >= 0, nil
	})
	if err != nil {
		t.Fatalf("no Normal %s Event on %s/%s: %s", loadbalancer.ReasonRecreatingMonitors, ns, name, cp.EventsOf(ctx, ns, name))
	}
	for _, want := range []string{"delete health monitor", "re-created", "ovn-octavia-provider"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Event %q does not say %q", msg, want)
		}
	}
}
