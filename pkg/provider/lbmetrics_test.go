package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cloud-provider/api"

	"github.com/stackward/stackward/pkg/loadbalancer"
)

func TestLoadBalancerReconcilesAreTimedByOutcome(t *testing.T) {
	tests := []struct {
		name, operation string
		err             error
		wantOutcome     string
	}{
		{"a load balancer ensured is a success", "ensure", nil, "success"},
		{"Octavia still busy is a requeue, not an error", "update", api.NewRetryError("load balancer PENDING_UPDATE", time.Second), "requeued"},
		{"a wrapped busy answer is still a requeue", "ensure", errorsJoin(api.NewRetryError("busy", time.Second)), "requeued"},
		{"a cloud failure is an error", "delete", errors.New("octavia said 500"), "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			m, err := newLBMetrics(reg, nil)
			if err != nil {
				t.Fatal(err)
			}
			m.observe(tt.operation, time.Now().Add(-2*time.Second), tt.err)
			want := `stackward_service_lb_reconcile_duration_seconds_count{operation="` + tt.operation + `",outcome="` + tt.wantOutcome + `"} 1`
			if got := gathered(t, reg); !strings.Contains(got, want) {
				t.Errorf("metrics do not have %s:\n%s", want, got)
			}
			if n := testutil.CollectAndCount(m.duration); n != 1 {
				t.Errorf("%d series, want 1", n)
			}
		})
	}
}

// TestLoadBalancerMetricsSurviveASecondRun: the CCM run twice in one
// process (tests, the legacy registry) keeps one collector.
func TestLoadBalancerMetricsSurviveASecondRun(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, err := newLBMetrics(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := newLBMetrics(reg, nil)
	if err != nil {
		t.Fatalf("second registration: %v", err)
	}
	second.observe("ensure", time.Now(), nil)
	if n := testutil.CollectAndCount(first.duration); n != 1 {
		t.Errorf("the first run's collector sees %d series, want the second run's observation", n)
	}
}

func errorsJoin(err error) error { return errors.Join(errors.New("ensure lb-x"), err) }

// gathered renders each histogram series of reg as
// name_count{labels} count, one per line.
func gathered(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			if h := m.GetHistogram(); h != nil {
				fmt.Fprintf(&b, "%s_count{%s} %d\n", mf.GetName(), strings.Join(labels, ","), h.GetSampleCount())
			}
		}
	}
	return b.String()
}

// TestEveryLoadBalancerCallIsMeasured: the service controller's calls go
// through the provider's hook, which records each one, failures included
// (here the apiserver cannot tell the cluster UID).
func TestEveryLoadBalancerCallIsMeasured(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := newLBMetrics(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	noUID := func(context.Context) (string, error) { return "", errors.New("no apiserver client") }
	lbs := &loadBalancers{m: &loadbalancer.Manager{ClusterUID: noUID}, metrics: m}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
	ctx := context.Background()
	if _, err := lbs.EnsureLoadBalancer(ctx, "lab", svc, nil); err == nil {
		t.Error("EnsureLoadBalancer succeeded without a cluster UID")
	}
	if err := lbs.UpdateLoadBalancer(ctx, "lab", svc, nil); err == nil {
		t.Error("UpdateLoadBalancer succeeded without a cluster UID")
	}
	if err := lbs.EnsureLoadBalancerDeleted(ctx, "lab", svc); err == nil {
		t.Error("EnsureLoadBalancerDeleted succeeded without a cluster UID")
	}
	got := gathered(t, reg)
	for _, op := range []string{"ensure", "update", "delete"} {
		if want := `stackward_service_lb_reconcile_duration_seconds_count{operation="` + op + `",outcome="error"} 1`; !strings.Contains(got, want) {
			t.Errorf("metrics do not have %s:\n%s", want, got)
		}
	}
}

func TestUpstreamReconcileMetricsAreExported(t *testing.T) {
	tests := []struct {
		name, operation string
		err             error
		wantErrors      float64
	}{
		{"an ensured load balancer is upstream's loadbalancer_ensure, no error", "ensure", nil, 0},
		{"Octavia still busy is a reconcile but not an error", "update", api.NewRetryError("PENDING_UPDATE", time.Second), 0},
		{"a cloud failure is an error of loadbalancer_delete", "delete", errors.New("octavia said 500"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			m, err := newLBMetrics(reg, nil)
			if err != nil {
				t.Fatal(err)
			}
			m.observe(tt.operation, time.Now().Add(-2*time.Second), tt.err)
			op := "loadbalancer_" + tt.operation
			want := `cloudprovider_openstack_reconcile_duration_seconds_count{operation="` + op + `"} 1`
			if got := gathered(t, reg); !strings.Contains(got, want) {
				t.Errorf("metrics do not have %s:\n%s", want, got)
			}
			if got := testutil.ToFloat64(m.upTotal.WithLabelValues(op)); got != 1 {
				t.Errorf("cloudprovider_openstack_reconcile_total{operation=%q} = %v, want 1", op, got)
			}
			if got := testutil.ToFloat64(m.upErrors.WithLabelValues(op)); got != tt.wantErrors {
				t.Errorf("cloudprovider_openstack_reconcile_errors_total{operation=%q} = %v, want %v", op, got, tt.wantErrors)
			}
		})
	}
}
