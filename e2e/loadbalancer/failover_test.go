//go:build e2e

package loadbalancer

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/e2e/framework"
)

// A leader failover in the middle of creating 20 Services: the CCM stops
// (as a lost lease stops it) while load balancers are being created and
// PENDING, another starts, and the end state has one load balancer and one
// floating IP per Service, nothing more; deleting the Services leaves
// nothing.
func TestFailoverWhileCreating20ServicesLeavesNoDuplicateAndNoOrphan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l := newLab(ctx, t, framework.SimCloudOptions{OctaviaDelay: 2 * time.Second, Latency: 50 * time.Millisecond}, "", nil, "fo", 80, 2)
	cp, api := l.cp, l.api
	createNamespace(ctx, t, cp, "fleet")
	t.Cleanup(func() { dropServices(t, cp, "fleet") })
	fipsBefore, err := api.floatingIPs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		if _, err := cp.Admin.CoreV1().Services("fleet").Create(ctx, lbService("fleet", fmt.Sprintf("svc-%02d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	st := waitTree(ctx, t, api, 60*time.Second, "some load balancers created", func(st *octaviaState) bool { return st.N >= 5 })
	t.Logf("failing over with %d of %d load balancers created", st.N, n)
	l.stop()
	startCCM(ctx, t, cp, l.conf, l.args...)

	for i := range n {
		waitIngress(ctx, t, cp, "fleet", fmt.Sprintf("svc-%02d", i), 3*time.Minute)
	}
	st = waitTree(ctx, t, api, 60*time.Second, "20 ACTIVE load balancers", func(st *octaviaState) bool {
		if st.N != n {
			return false
		}
		for _, lb := range st.LBs {
			if lb.Status != "ACTIVE" {
				return false
			}
		}
		return true
	})
	if len(st.LBs) != n || st.Listeners != n || st.Pools != n {
		t.Errorf("%d load balancers (%d names), %d listeners, %d pools; want %d of each", st.N, len(st.LBs), st.Listeners, st.Pools, n)
	}
	fips, err := api.floatingIPs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	onVIP := map[string]int{}
	for _, f := range fips {
		onVIP[f.PortID]++
	}
	for name, lb := range st.LBs {
		if onVIP[lb.VIPPortID] != 1 {
			t.Errorf("%s has %d floating IPs", name, onVIP[lb.VIPPortID])
		}
	}
	if len(fips) != len(fipsBefore)+n {
		t.Errorf("%d floating IPs, want %d", len(fips), len(fipsBefore)+n)
	}

	t.Run("deleting the Services leaves nothing", func(t *testing.T) {
		for i := range n {
			if err := cp.Admin.CoreV1().Services("fleet").Delete(ctx, fmt.Sprintf("svc-%02d", i), metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		waitTree(ctx, t, api, 3*time.Minute, "an empty Octavia", func(st *octaviaState) bool {
			return st.N == 0 && st.Listeners == 0 && st.Pools == 0 && st.Members == 0
		})
		fips, err := api.floatingIPs(ctx)
		if err != nil || len(fips) != len(fipsBefore) {
			t.Errorf("floating IPs: %d before, %d after (%v)", len(fipsBefore), len(fips), err)
		}
		if vips, err := api.octaviaPorts(ctx); err != nil || len(vips) != 0 {
			t.Errorf("VIP ports left: %d %v", len(vips), err)
		}
	})
}
