//go:build e2e

// Package release tests what an operator gets from a release: `make
// release` against a real OCI registry (distribution's, from the tools
// cache) in the lab, `helm install` of the pushed chart from oci:// with Helm
// 3 and Helm 4, the installed Deployment's images as the registry serves
// them, and the chart's pod run from the binaries inside those images.
package release

import (
	"testing"

	"github.com/stackward/stackward/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }
