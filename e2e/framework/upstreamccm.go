package framework

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The upstream openstack-cloud-controller-manager, as e2e/upstreamccm
// builds it: the takeover tests let the real thing make the load balancers
// and routes Stackward then takes over, instead of imitating them.

// UpstreamCCMServiceAccount is the identity upstream's manifests give the
// CCM (its ClusterRoleBinding names it).
const UpstreamCCMServiceAccount = "cloud-controller-manager"

// UpstreamCCMDir is where e2e/upstreamccm/build.sh put the upstream CCM and
// its release's RBAC manifests; the Makefile passes it in
// STACKWARD_UPSTREAM_CCM_DIR.
func UpstreamCCMDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("STACKWARD_UPSTREAM_CCM_DIR")
	if dir == "" {
		t.Fatal("STACKWARD_UPSTREAM_CCM_DIR is not set: run the e2e tests with `make e2e` (it builds the upstream CCM first), " +
			"or set it to $(e2e/upstreamccm/build.sh --print-dir)")
	}
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		t.Fatalf("the upstream CCM in %s is incomplete: run `make tools`", dir)
	}
	return dir
}

// StartUpstreamCCM runs the upstream CCM as a process with its release's
// own RBAC (ClusterRoles and bindings from its manifests, its ServiceAccount
// in kube-system, a token from the TokenRequest API as its pod would get).
// args follow --kubeconfig, --cloud-provider and --cloud-config. It runs
// until the test ends or the returned Process is stopped, as
// `helm uninstall` would stop its pod.
func (cp *ControlPlane) StartUpstreamCCM(ctx context.Context, t testing.TB, cloudConf string, args ...string) *Process {
	t.Helper()
	dir := UpstreamCCMDir(t)
	for _, m := range []string{"cloud-controller-manager-roles.yaml", "cloud-controller-manager-role-bindings.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, m))
		if err != nil {
			t.Fatal(err)
		}
		cp.Apply(t, string(data))
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: UpstreamCCMServiceAccount, Namespace: ChartNamespace}}
	if _, err := cp.Admin.CoreV1().ServiceAccounts(ChartNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("serviceaccount %s/%s: %v", ChartNamespace, UpstreamCCMServiceAccount, err)
	}
	cfg, err := cp.ServiceAccountConfig(ctx, ChartNamespace, UpstreamCCMServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig, cfg); err != nil {
		t.Fatal(err)
	}
	all := append([]string{"--kubeconfig=" + kubeconfig, "--cloud-provider=openstack", "--cloud-config=" + cloudConf}, args...)
	return StartProcessForTest(t, work, "openstack-cloud-controller-manager", filepath.Join(dir, "openstack-cloud-controller-manager"), all...)
}
