//go:build e2e

package takeover

import (
	"testing"

	"github.com/stackward/stackward/e2e/framework"
)

func TestMain(m *testing.M) { framework.UpstreamCCMMain(m) }

// The upstream CCM's load balancers, floating IPs, security groups and
// routes on stackward-cloudsim are taken over by Stackward as
// docs/install/upstream-ccm.md says (see Run).
func TestStackwardTakesOverFromTheRealUpstreamCCM(t *testing.T) {
	Run(t, framework.SharedControlPlane(t), framework.StartCloud(t, framework.CloudOptions{}).Backend(), 10)
}
