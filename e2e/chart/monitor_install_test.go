//go:build e2e

package chart

import (
	"context"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/stackward/stackward/e2e/framework"
)

// monRelease is this test's release, apart from the other tests' ones.
const monRelease = "stackward-mon"

var (
	crdGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	podMonitorGVR = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "podmonitors"}
)

// TestPodMonitorFollowsTheServedAPI installs the chart with a PodMonitor
// into the lab's apiserver before and after a PodMonitor CRD exists: the
// Capabilities guard skips it first and creates it (with the metrics-reader
// identity it scrapes with) once the API is served, on `helm upgrade`.
func TestPodMonitorFollowsTheServedAPI(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cfg := helmConfig(t, cp)
	chrt, err := loader.Load(chartDir())
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	dyn := dynamic.NewForConfigOrDie(cp.AdminConfig)
	values := map[string]any{
		"cloudConfig": map[string]any{"contents": "[Global]\nauth-url = https://keystone.lab.invalid:5000/v3\n"},
		"podMonitor":  map[string]any{"enabled": true},
	}
	t.Cleanup(func() {
		_, _ = action.NewUninstall(cfg).Run(monRelease)
		_ = dyn.Resource(crdGVR).Delete(context.Background(), "podmonitors.monitoring.coreos.com", metav1.DeleteOptions{})
	})
	reader := monRelease + "-metrics-reader"

	if !t.Run("without the API the install skips the PodMonitor and its reader", func(t *testing.T) {
		install := action.NewInstall(cfg)
		install.ReleaseName, install.Namespace, install.Timeout = monRelease, ns, time.Minute
		rel, err := install.RunWithContext(ctx, chrt, values)
		if err != nil {
			t.Fatalf("helm install: %v", err)
		}
		if _, err := cp.Admin.CoreV1().ServiceAccounts(ns).Get(ctx, reader, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("ServiceAccount %s: %v, want not found", reader, err)
		}
		if !strings.Contains(rel.Info.Notes, "PodMonitor was enabled but not created") {
			t.Errorf("NOTES do not say the PodMonitor was skipped:\n%s", rel.Info.Notes)
		}
	}) {
		return
	}

	t.Run("once the API is served an upgrade creates the PodMonitor and a reader that may only GET /metrics", func(t *testing.T) {
		createPodMonitorCRD(ctx, t, dyn)
		// A new helm process: action.Configuration keeps the Capabilities
		// it read first.
		upgrade := action.NewUpgrade(helmConfig(t, cp))
		upgrade.Namespace, upgrade.Timeout = ns, time.Minute
		if _, err := upgrade.RunWithContext(ctx, monRelease, chrt, values); err != nil {
			t.Fatalf("helm upgrade: %v", err)
		}
		pm, err := dyn.Resource(podMonitorGVR).Namespace(ns).Get(ctx, monRelease, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("PodMonitor: %v", err)
		}
		eps, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
		if len(eps) == 0 {
			t.Fatalf("PodMonitor has no endpoints: %v", pm.Object)
		}
		secret, _, _ := unstructured.NestedString(eps[0].(map[string]any), "authorization", "credentials", "name")
		if secret != reader+"-token" {
			t.Errorf("PodMonitor sends the token of Secret %q, want %s-token", secret, reader)
		}
		// The token controller fills the Secret; its token is the reader's.
		var token []byte
		if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			s, err := cp.Admin.CoreV1().Secrets(ns).Get(ctx, secret, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			token = s.Data["token"]
			return len(token) > 0, nil
		}); err != nil {
			t.Fatalf("Secret %s got no token: %v", secret, err)
		}
		client := kubernetes.NewForConfigOrDie(cp.RESTConfigForToken(string(token)))
		tests := []struct {
			name  string
			spec  authorizationv1.SelfSubjectAccessReviewSpec
			allow bool
		}{
			{"the reader may GET /metrics", authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}, true},
			{"the reader may not GET other paths", authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/debug/pprof/", Verb: "get"}}, false},
			{"the reader may not read Secrets", authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Resource: "secrets", Verb: "get"}}, false},
			{"the reader may not list Nodes", authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Resource: "nodes", Verb: "list"}}, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: tt.spec}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if r.Status.Allowed != tt.allow {
					t.Errorf("allowed %v, want %v (%s)", r.Status.Allowed, tt.allow, r.Status.Reason)
				}
			})
		}
	})
}

// createPodMonitorCRD serves monitoring.coreos.com/v1 PodMonitor with an
// open schema (the chart's objects are checked by prometheus-operator's
// own CRD in real clusters, not here) and waits until it is Established.
func createPodMonitorCRD(ctx context.Context, t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "podmonitors.monitoring.coreos.com"},
		"spec": map[string]any{
			"group": "monitoring.coreos.com",
			"scope": "Namespaced",
			"names": map[string]any{"kind": "PodMonitor", "listKind": "PodMonitorList", "plural": "podmonitors", "singular": "podmonitor"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PodMonitor CRD: %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := dyn.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("PodMonitor CRD not Established: %v", err)
	}
}
