//go:build e2e

// Package realcloud runs Stackward's cloud-facing e2e scenarios against real
// OpenStack services (Debian's Zed packages: Keystone, Nova with the fake
// driver, Neutron ML2/OVN, Octavia) and against stackward-cloudsim with the
// same test code, a subtest per backend (framework.Backends): node
// initialization and lifecycle, the approver, routes and address pairs, a
// second cluster's resources, the harness's bad input and the differential
// fidelity test. Services of type LoadBalancer are in the loadbalancers
// package below, with a real cloud of its own, so the two halves of the
// lane run side by side. A missing package fails the lane: it never skips.
package realcloud

import (
	"testing"

	"github.com/stackward/stackward/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }
