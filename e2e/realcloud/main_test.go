//go:build e2e

// Package realcloud runs Stackward's cloud-facing e2e scenarios against real
// OpenStack services (Debian's Zed packages: Keystone, Nova with the fake
// driver, Neutron ML2/OVN, Octavia) brought up once for the package inside
// the lab's network namespace, and against stackward-cloudsim with the same
// test code, a subtest per backend. A missing package fails the package: the
// lane never skips.
package realcloud

import (
	"fmt"
	"os"
	"testing"

	"github.com/stackward/stackward/e2e/framework"
)

// realCloud is the package's real cloud, up for the whole run.
var realCloud *framework.RealCloud

func TestMain(m *testing.M) {
	framework.RunInLab(func() int {
		rc, stop, err := framework.NewRealCloud()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer stop()
		fmt.Fprintf(os.Stderr, "real cloud up in %s (state and logs in %s)\n", rc.StartupTime.Round(1e9), rc.Dir)
		realCloud = rc
		return m.Run()
	})
}

// backend is one cloud a scenario runs against, and the node indexes
// (framework.NodeIP) it may use, so the two never share an address.
type backend struct {
	cloud     framework.TestCloud
	firstNode int
}

// backends returns the simulator (started for the test) and the real cloud.
func backends(t *testing.T) []backend {
	t.Helper()
	return []backend{
		{cloud: framework.StartCloud(t, framework.CloudOptions{}).Backend(), firstNode: 1},
		{cloud: realCloud, firstNode: 101},
	}
}
