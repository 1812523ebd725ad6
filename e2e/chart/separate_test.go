//go:build e2e

package chart

import (
	"context"
	"slices"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stackward/stackward/e2e/framework"
)

// sepRelease installs the chart with approver.separatePod beside (never
// at the same time as) sdkRelease.
const sepRelease = "stackward-sep"

// TestSeparateApproverPodRunsOnAnExpiringTokenOfItsOwn: with
// approver.separatePod the approver is a workload of its own whose pod
// runs as the approver's ServiceAccount on a projected, expiring token;
// no non-expiring token Secret exists; the CCM's pod carries neither the
// approver nor any credential of it; and the two identities stay apart
// (the approver approves and cannot write Nodes, the CCM writes Nodes and
// cannot approve or mint tokens).
func TestSeparateApproverPodRunsOnAnExpiringTokenOfItsOwn(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := helmConfig(t, cp)
	chrt, err := loader.Load(chartDir())
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	values := chartValues("RegionOne")
	values["approver"] = map[string]any{"separatePod": true}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.Timeout = sepRelease, ns, 2*time.Minute
	if _, err := install.RunWithContext(ctx, chrt, values); err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Cleanup(func() { _, _ = action.NewUninstall(cfg).Run(sepRelease) })
	ccmSA, approverSA := sepRelease, sepRelease+"-approver"

	deployments := cp.Admin.AppsV1().Deployments(ns)
	ccm, err := deployments.Get(ctx, sepRelease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	approver, err := deployments.Get(ctx, sepRelease+"-approver", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the approver's own Deployment: %v", err)
	}
	pod := approver.Spec.Template.Spec
	if pod.ServiceAccountName != approverSA || len(pod.Containers) != 1 || pod.Containers[0].Name != "approver" {
		t.Errorf("the approver's pod runs as %q with containers %d; want %s, the approver alone", pod.ServiceAccountName, len(pod.Containers), approverSA)
	}
	expiring := slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
		return v.Name == "approver-token" && v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(p corev1.VolumeProjection) bool {
			return p.ServiceAccountToken != nil && p.ServiceAccountToken.ExpirationSeconds != nil && *p.ServiceAccountToken.ExpirationSeconds <= 3607
		})
	})
	if !expiring {
		t.Errorf("the approver's pod has no projected, expiring token: %+v", pod.Volumes)
	}
	ccmPod := ccm.Spec.Template.Spec
	if ccmPod.ServiceAccountName != ccmSA || slices.ContainsFunc(ccmPod.Containers, func(c corev1.Container) bool { return c.Name == "approver" }) ||
		slices.ContainsFunc(ccmPod.Volumes, func(v corev1.Volume) bool { return v.Name == "approver-token" }) {
		t.Errorf("the CCM's pod (ServiceAccount %s) still carries the approver or its credential", ccmPod.ServiceAccountName)
	}
	if _, err := cp.Admin.CoreV1().Secrets(ns).Get(ctx, approverSA+"-token", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the approver's non-expiring token Secret: %v, want NotFound", err)
	}
	if _, err := cp.Admin.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, sepRelease+"-approver", metav1.GetOptions{}); err != nil {
		t.Errorf("the approver's Deployment has no PodDisruptionBudget: %v", err)
	}

	// Each identity as its pod gets it: a token of its ServiceAccount that
	// expires within the hour (what the kubelet projects).
	clients := map[string]kubernetes.Interface{}
	for _, name := range []string{ccmSA, approverSA} {
		saConfig, err := cp.ServiceAccountConfig(ctx, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		saConfig.QPS, saConfig.Burst = 50, 100
		clients[name] = kubernetes.NewForConfigOrDie(saConfig)
	}
	t.Run("each ServiceAccount may do what its pod needs, and no more", func(t *testing.T) {
		checkAccess(ctx, t, cp, clients, ccmSA, approverSA)
		checkApprovals(ctx, t, cp, clients[approverSA], "")
	})
}
