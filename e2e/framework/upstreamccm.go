package framework

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// UpstreamCCMMain is the TestMain of a package that runs the upstream CCM:
// outside the lab (which has no route out) it has e2e/upstreamccm/build.sh
// build it into its cache when absent, then it runs the tests as Main does.
// Building it here rather than before `go test` lets the build overlap the
// longer e2e packages that run beside this one.
func UpstreamCCMMain(m *testing.M) {
	if !InLab() {
		dir, err := buildUpstreamCCM()
		if err != nil {
			fmt.Fprintln(os.Stderr, "upstream CCM:", err)
			os.Exit(2)
		}
		// The test binary re-executed in the lab inherits it.
		os.Setenv("STACKWARD_UPSTREAM_CCM_DIR", dir)
	}
	Main(m)
}

// buildUpstreamCCM runs e2e/upstreamccm/build.sh (a no-op when its cache
// entry is complete) and returns the directory it names.
func buildUpstreamCCM() (string, error) {
	script := filepath.Join(RepoRoot(), "e2e", "upstreamccm", "build.sh")
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(script)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w\n%s", script, err, stderr.String())
	}
	if stderr.Len() > 0 {
		os.Stderr.Write(stderr.Bytes()) // the build's own timing line
	}
	return strings.TrimSpace(stdout.String()), nil
}

// UpstreamCCMDir is where e2e/upstreamccm/build.sh put the upstream CCM and
// its release's RBAC manifests: STACKWARD_UPSTREAM_CCM_DIR, which
// UpstreamCCMMain sets.
func UpstreamCCMDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("STACKWARD_UPSTREAM_CCM_DIR")
	if dir == "" {
		t.Fatal("STACKWARD_UPSTREAM_CCM_DIR is not set: the package's TestMain must be framework.UpstreamCCMMain, " +
			"or set it to $(e2e/upstreamccm/build.sh --print-dir) after `make tools`")
	}
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		t.Fatalf("the upstream CCM in %s is incomplete: run `make tools`", dir)
	}
	return dir
}

// UpstreamRBAC is RBAC the upstream CCM runs with in the takeover e2e: an
// upstream release's, which the switch must work after.
type UpstreamRBAC struct {
	// Name says whose it is (a subtest's name).
	Name      string
	manifests func(t testing.TB) string
}

//go:embed testdata/upstream-chart-2.36.2-rbac.yaml
var upstreamChart2362RBAC string

var (
	// UpstreamReleaseRBAC is the RBAC of upstream's v1.36.0 manifests
	// (e2e/upstreamccm/build.sh copies them beside the binary): the
	// system:cloud-controller-manager ClusterRole of chart 2.36.0, and
	// system:cloud-node-controller for upstream's per-controller account.
	UpstreamReleaseRBAC = UpstreamRBAC{Name: "upstream chart 2.36.0 RBAC", manifests: func(t testing.TB) string {
		dir := UpstreamCCMDir(t)
		var all []string
		for _, m := range []string{"cloud-controller-manager-roles.yaml", "cloud-controller-manager-role-bindings.yaml"} {
			data, err := os.ReadFile(filepath.Join(dir, m))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, string(data))
		}
		return strings.Join(all, "\n---\n")
	}}
	// UpstreamChart2362RBAC is chart 2.36.2's (testdata): a ClusterRole
	// without Secrets, PersistentVolumes or deleting nodes, and a Role
	// for the one Secret in the release namespace.
	UpstreamChart2362RBAC = UpstreamRBAC{Name: "upstream chart 2.36.2 RBAC", manifests: func(testing.TB) string { return upstreamChart2362RBAC }}
)

// StartUpstreamCCM runs the upstream CCM as a process with rbac (applied
// for the test, removed after it), its ServiceAccount in kube-system and a
// token from the TokenRequest API as its pod would get. args follow
// --kubeconfig, --cloud-provider and --cloud-config. It runs until the
// test ends or the returned Process is stopped, as `helm uninstall` would
// stop its pod.
func (cp *ControlPlane) StartUpstreamCCM(ctx context.Context, t testing.TB, rbac UpstreamRBAC, cloudConf string, args ...string) *Process {
	t.Helper()
	return cp.StartUpstreamCCMAs(t, cp.UpstreamCCMKubeconfig(ctx, t, rbac), cloudConf, args...)
}

// UpstreamCCMKubeconfig applies rbac (removed after the test), creates the
// upstream CCM's ServiceAccount and writes a kubeconfig with a token for
// it, so that a benchmark can do all of this before its timer starts.
func (cp *ControlPlane) UpstreamCCMKubeconfig(ctx context.Context, t testing.TB, rbac UpstreamRBAC) string {
	t.Helper()
	manifests := rbac.manifests(t)
	cp.Apply(t, manifests)
	t.Cleanup(func() {
		// The next test's RBAC must not inherit this one's grants.
		cmd := exec.Command("kubectl", "--kubeconfig", filepath.Join(KubernetesDir, "super-admin.conf"), "delete", "--ignore-not-found", "-f", "-")
		cmd.Stdin = strings.NewReader(manifests)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("remove %s: %v\n%s", rbac.Name, err, out)
		}
	})
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: UpstreamCCMServiceAccount, Namespace: ChartNamespace}}
	if _, err := cp.Admin.CoreV1().ServiceAccounts(ChartNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("serviceaccount %s/%s: %v", ChartNamespace, UpstreamCCMServiceAccount, err)
	}
	cfg, err := cp.ServiceAccountConfig(ctx, ChartNamespace, UpstreamCCMServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig, cfg); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// StartUpstreamCCMAs runs the upstream CCM with a kubeconfig from
// UpstreamCCMKubeconfig (see StartUpstreamCCM).
func (cp *ControlPlane) StartUpstreamCCMAs(t testing.TB, kubeconfig, cloudConf string, args ...string) *Process {
	t.Helper()
	bin := filepath.Join(UpstreamCCMDir(t), "openstack-cloud-controller-manager")
	all := append([]string{"--kubeconfig=" + kubeconfig, "--cloud-provider=openstack", "--cloud-config=" + cloudConf}, args...)
	return StartProcessForTest(t, t.TempDir(), "openstack-cloud-controller-manager", bin, all...)
}
