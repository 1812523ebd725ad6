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
	"sync"
	"testing"

	"github.com/stackward/stackward/e2e/framework"
)

// The package's real cloud: brought up by the first test that needs it
// (a run of only the harness's own tests starts none) and up until the
// package ends.
var (
	realCloudOnce sync.Once
	realCloud     *framework.RealCloud
	realCloudErr  error
	stopRealCloud = func() {}
)

func TestMain(m *testing.M) {
	framework.RunInLab(func() int {
		defer func() { stopRealCloud() }()
		return m.Run()
	})
}

// sharedRealCloud returns the package's real cloud, bringing it up on first use.
func sharedRealCloud(t *testing.T) *framework.RealCloud {
	t.Helper()
	realCloudOnce.Do(func() {
		var stop func()
		realCloud, stop, realCloudErr = framework.NewRealCloud()
		if realCloudErr == nil {
			stopRealCloud = stop
			fmt.Fprintf(os.Stderr, "real cloud up in %s (state and logs in %s)\n", realCloud.StartupTime.Round(1e9), realCloud.Dir)
		}
	})
	if realCloudErr != nil {
		t.Fatal(realCloudErr)
	}
	return realCloud
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
		{cloud: sharedRealCloud(t), firstNode: 101},
	}
}
