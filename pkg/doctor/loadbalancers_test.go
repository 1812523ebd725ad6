package doctor

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stackward/stackward/pkg/openstack"
)

type fakeLister struct {
	lbs []openstack.LoadBalancer
	err error
	tag string
}

func (f *fakeLister) ListLoadBalancers(_ context.Context, tag string) ([]openstack.LoadBalancer, error) {
	f.tag = tag
	return f.lbs, f.err
}

// Only the cluster's load balancers busy for longer than the threshold
// are findings, each naming its Service and what unblocks it.
func TestStuckLoadBalancersAreTheLongPendingOnes(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	lister := &fakeLister{lbs: []openstack.LoadBalancer{
		{ID: "lb-stuck", Name: "kube_service_lab_shop_web", ProvisioningStatus: "PENDING_CREATE", CreatedAt: now.Add(-40 * time.Minute),
			Tags: []string{"kube_cluster_uid=uid-1", "kube_service=shop/web"}},
		{ID: "lb-busy", Name: "kube_service_lab_shop_api", ProvisioningStatus: "PENDING_UPDATE", CreatedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Minute)},
		{ID: "lb-old-update", Name: "kube_service_lab_shop_db", ProvisioningStatus: "PENDING_UPDATE", CreatedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-20 * time.Minute)},
		{ID: "lb-active", Name: "kube_service_lab_shop_ok", ProvisioningStatus: "ACTIVE", CreatedAt: now.Add(-time.Hour)},
	}}
	got, err := stuckLoadBalancers(context.Background(), lister, "uid-1", now, 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if lister.tag != "kube_cluster_uid=uid-1" {
		t.Errorf("listed by tag %q, want the cluster's", lister.tag)
	}
	if len(got) != 2 || got[0].ID != "lb-stuck" || got[1].ID != "lb-old-update" {
		t.Fatalf("stuck %+v, want lb-stuck then lb-old-update", got)
	}
	if got[0].Service != "shop/web" || got[0].Age != "40m0s" || !strings.Contains(got[0].Hint, "ERROR") {
		t.Errorf("finding %+v", got[0])
	}

	r := &Report{StuckLoadBalancers: got}
	if r.Findings() != 2 {
		t.Errorf("%d findings, want the two load balancers", r.Findings())
	}
	var out bytes.Buffer
	if err := WriteText(&out, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"load balancer kube_service_lab_shop_web (lb-stuck)  Service shop/web", "stuck PENDING_CREATE since 2026-11-27T11:20:00Z (40m0s)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// A listing that fails is said, never taken as "nothing stuck".
func TestStuckLoadBalancersFailClosed(t *testing.T) {
	_, err := stuckLoadBalancers(context.Background(), &fakeLister{err: errors.New("503")}, "uid-1", time.Now(), time.Minute)
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("err %v, want the listing's", err)
	}
}
