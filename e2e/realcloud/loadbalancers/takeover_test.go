//go:build e2e

package loadbalancers

import (
	"testing"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/e2e/takeover"
)

// TestTakeoverFromTheUpstreamCCMOnRealOpenStack is e2e/takeover's
// scenario on real Neutron and Octavia: the upstream CCM v1.36.0, under
// the RBAC of its newest chart (2.36.2), makes the nodes' routes and the
// load balancers, floating IPs and security groups of every kind of
// Service; Stackward takes them over keeping every address and, on
// delete, leaves what upstream would have left. (On stackward-cloudsim
// e2e/takeover runs it under the RBAC of chart 2.36.0 and of 2.36.2.)
func TestTakeoverFromTheUpstreamCCMOnRealOpenStack(t *testing.T) {
	takeover.Run(t, framework.SharedControlPlane(t), framework.SharedRealCloud(t), framework.UpstreamChart2362RBAC, 101+90)
}
