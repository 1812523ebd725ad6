//go:build e2e

package takeover

import (
	"testing"

	"github.com/stackward/stackward/e2e/framework"
)

func TestMain(m *testing.M) { framework.UpstreamCCMMain(m) }

// The upstream CCM's load balancers, floating IPs, security groups and
// routes on stackward-cloudsim are taken over by Stackward as
// docs/install/upstream-ccm.md says (see Run), with the upstream CCM
// running under the RBAC of its chart 2.36.0 and under the narrower one
// of 2.36.2. Each takes about 40 s here.
func TestStackwardTakesOverFromTheRealUpstreamCCM(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	for i, rbac := range []framework.UpstreamRBAC{framework.UpstreamReleaseRBAC, framework.UpstreamChart2362RBAC} {
		t.Run(rbac.Name, func(t *testing.T) {
			Run(t, cp, framework.StartSimCloud(t, framework.SimCloudOptions{}).TestCloud(), rbac, 10+10*i)
		})
	}
}
