//go:build e2e

package chart

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/internal/cloudsim"
)

// approverMetricsURL is where the chart's approver container serves in the
// lab: its pod IP (127.0.0.1 here) and approver.metricsPort.
const approverMetricsURL = "https://127.0.0.1:10263/metrics"

// checkApproverMetrics asserts, on the running chart pod, that the
// approver's /metrics is behind delegated authentication and authorization
// (the chart's metrics-reader ClusterRole is what a scraper needs) and that
// its pending gauge follows a kubelet serving request the approver cannot
// decide yet (the cloud is down), back to 0 once it is approved.
func checkApproverMetrics(ctx context.Context, t *testing.T, cp *framework.ControlPlane, cloud *framework.SimCloud, release string) {
	t.Helper()
	reader := serviceAccountToken(ctx, t, cp, "metrics-scraper", release+"-metrics-reader")
	stranger := serviceAccountToken(ctx, t, cp, "metrics-stranger", "")
	access := []struct {
		name, token string
		want        []int
	}{
		{"without credentials the approver's metrics are refused", "", []int{http.StatusUnauthorized, http.StatusForbidden}},
		{"a token without get /metrics is forbidden", stranger, []int{http.StatusForbidden}},
		{"a forged token is unauthorized", "not-a-token", []int{http.StatusUnauthorized}},
		{"a token bound to the chart's metrics-reader role reads them", reader, []int{http.StatusOK}},
	}
	for _, a := range access {
		t.Run(a.name, func(t *testing.T) {
			code, body, err := scrape(a.token)
			if err != nil {
				t.Fatal(err)
			}
			ok := false
			for _, w := range a.want {
				ok = ok || code == w
			}
			if !ok {
				t.Errorf("GET %s: %d, want one of %v: %.300s", approverMetricsURL, code, a.want, body)
			}
		})
	}
	if t.Failed() {
		return
	}

	t.Run("the pending gauge counts a request held up by a cloud outage and drops when it is approved", func(t *testing.T) {
		if got := pendingGauge(ctx, t, reader, func(n, _ float64) bool { return n == 0 }); got != 0 {
			t.Fatalf("stackward_csr_pending %v before the join, want 0", got)
		}
		cloud.CreateServer(t, "chart-node-2", 2, "m1.small", "az-1")
		if err := cloud.Sim.SetFault(cloudsim.FaultRule{Service: "compute", Status: 503}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cloud.Sim.ClearFaults)
		cp.StartNode(t, framework.NodeOptions{Name: "chart-node-2", IP: framework.NodeIP(2)})
		if got := pendingGauge(ctx, t, reader, func(n, age float64) bool { return n >= 1 && age > 0 }); got < 1 {
			t.Fatalf("stackward_csr_pending %v while the cloud is down, want at least 1", got)
		}
		cloud.Sim.ClearFaults()
		if got := pendingGauge(ctx, t, reader, func(n, _ float64) bool { return n == 0 }); got != 0 {
			t.Fatalf("stackward_csr_pending %v after the cloud recovered, want 0", got)
		}
	})
}

// serviceAccountToken creates a ServiceAccount in the chart's namespace,
// binds it to clusterRole (none: no binding) and returns a token of it.
func serviceAccountToken(ctx context.Context, t *testing.T, cp *framework.ControlPlane, name, clusterRole string) string {
	t.Helper()
	sa, err := cp.Admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.CoreV1().ServiceAccounts(ns).Delete(context.Background(), sa.Name, metav1.DeleteOptions{})
	})
	if clusterRole != "" {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		}
		if _, err := cp.Admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cp.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	cfg, err := cp.ServiceAccountConfig(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.BearerToken
}

// scrape GETs the approver's /metrics as Prometheus would with
// insecureSkipVerify (the serving certificate is self-signed).
func scrape(token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, approverMetricsURL, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("GET %s: %w", approverMetricsURL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

var (
	pendingLine = regexp.MustCompile(`(?m)^stackward_csr_pending (\S+)$`)
	ageLine     = regexp.MustCompile(`(?m)^stackward_csr_oldest_pending_age_seconds (\S+)$`)
)

// pendingGauge scrapes until the pending count and oldest age satisfy
// until (or a minute passes) and returns the last count (-1: never read).
func pendingGauge(ctx context.Context, t *testing.T, token string, until func(n, age float64) bool) float64 {
	t.Helper()
	last, lastBody := -1.0, ""
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		code, body, err := scrape(token)
		if err != nil || code != http.StatusOK {
			return false, nil
		}
		lastBody = body
		n, age := pendingLine.FindStringSubmatch(body), ageLine.FindStringSubmatch(body)
		if n == nil || age == nil {
			return false, nil
		}
		count, err1 := strconv.ParseFloat(n[1], 64)
		seconds, err2 := strconv.ParseFloat(age[1], 64)
		if err1 != nil || err2 != nil {
			return false, nil
		}
		last = count
		return until(count, seconds), nil
	})
	if last < 0 {
		t.Logf("no stackward_csr_pending sample; last scrape:\n%.2000s", lastBody)
	}
	return last
}
