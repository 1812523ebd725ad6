package framework

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// ChartNamespace and ChartRelease name the lab's install of the chart.
const (
	ChartNamespace = "kube-system"
	ChartRelease   = "stackward"
	// ChartApproverServiceAccount is the approver's own ServiceAccount in
	// that install (the CCM's is ChartRelease).
	ChartApproverServiceAccount = ChartRelease + "-approver"
)

// RenderChart runs `helm template` (Helm 3) over charts/stackward with the
// given --set values and returns the manifests.
func RenderChart(t testing.TB, showOnly string, set ...string) string {
	t.Helper()
	out, err := RenderChartWith(ToolsDir(t), showOnly, set...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// RenderChartWith is RenderChart with the tools directory given.
func RenderChartWith(toolsDir, showOnly string, set ...string) (string, error) {
	args := []string{"template", ChartRelease, filepath.Join(RepoRoot(), "charts", "stackward"), "--namespace", ChartNamespace}
	if showOnly != "" {
		args = append(args, "--show-only", showOnly)
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := exec.Command(filepath.Join(toolsDir, "helm3"), args...).Output()
	if err != nil {
		msg := ""
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			msg = string(exit.Stderr)
		}
		return "", fmt.Errorf("helm template: %w\n%s", err, msg)
	}
	return string(out), nil
}

// Apply applies manifests as cluster-admin with kubectl.
func (cp *ControlPlane) Apply(t testing.TB, manifests string) {
	t.Helper()
	if err := cp.ApplyManifests(manifests); err != nil {
		t.Fatal(err)
	}
}

// ApplyManifests applies manifests as cluster-admin with kubectl.
func (cp *ControlPlane) ApplyManifests(manifests string) error {
	cmd := exec.Command("kubectl", "--kubeconfig", filepath.Join(KubernetesDir, "super-admin.conf"), "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifests)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl apply: %w\n%s", err, out)
	}
	return nil
}

// InstallChartRBAC applies the chart's ServiceAccount and RBAC, exactly as
// `helm install` would create them, and returns the ServiceAccount's name.
func (cp *ControlPlane) InstallChartRBAC(t testing.TB) string {
	t.Helper()
	sa, err := cp.ApplyChartRBAC()
	if err != nil {
		t.Fatal(err)
	}
	return sa
}

// ApplyChartRBAC is InstallChartRBAC for callers without a test; set are
// --set values for the render (e.g. approver.signer.enabled=true).
func (cp *ControlPlane) ApplyChartRBAC(set ...string) (string, error) {
	manifests, err := RenderChartWith(cp.toolsDir, "templates/rbac.yaml", set...)
	if err != nil {
		return "", err
	}
	return ChartRelease, cp.ApplyManifests(manifests)
}

// ServiceAccountConfig returns a client identity for a ServiceAccount, with
// a token from the TokenRequest API (as a pod would get it).
func (cp *ControlPlane) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	tr, err := cp.Admin.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for serviceaccount %s/%s: %w", namespace, name, err)
	}
	return cp.RESTConfigForToken(tr.Status.Token), nil
}

// NodeByName finds a node in a list (nil when absent).
func NodeByName(nodes []corev1.Node, name string) *corev1.Node {
	for i := range nodes {
		if nodes[i].Name == name {
			return &nodes[i]
		}
	}
	return nil
}
