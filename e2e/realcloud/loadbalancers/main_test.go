//go:build e2e

// Package loadbalancers is the real-cloud lane's Services of type
// LoadBalancer (see e2e/realcloud): each provider's defaults, health
// monitors, source ranges, security groups, floating IPs released or kept,
// a shared load balancer, ports and members that follow, the OVN provider's
// refusals and a delete that leaves nothing, on stackward-cloudsim and on
// real OpenStack. It brings up a real cloud of its own, in its own lab
// namespace, so it runs beside e2e/realcloud instead of after it.
package loadbalancers

import (
	"testing"

	"github.com/stackward/stackward/e2e/framework"
)

func TestMain(m *testing.M) { framework.UpstreamCCMMain(m) }
