package loadbalancer

import (
	"fmt"
	"testing"
	"time"
)

func TestProgressReasonReadsWhatNotReadyWrites(t *testing.T) {
	for _, reason := range []string{ReasonWaitingForOctavia, ReasonApplyingChanges, ReasonWaitingForNodeAddresses, ReasonRecreating, ReasonAdopting, ReasonRecreatingMonitors, ReasonWaitingForAdoption, ReasonRenaming, ReasonRenamed} {
		err := fmt.Errorf("failed to ensure load balancer: %w", notReady(5*time.Second, reason, "load balancer %s is %s", "x", "PENDING_UPDATE"))
		if got := ProgressReason("Error syncing load balancer: " + err.Error()); got != reason {
			t.Errorf("ProgressReason(%q) = %q, want %q", err, got, reason)
		}
	}
	if got := ProgressReason("create load balancer: Quota has been met for resources: LoadBalancer"); got != "" {
		t.Errorf("a failure reads as progress %q", got)
	}
}
