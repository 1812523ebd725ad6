//go:build e2e

package chart

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/stackward/stackward/e2e/framework"
)

const (
	// sdkRelease differs from framework.ChartRelease so that its
	// cluster-scoped RBAC never meets the lab's kubectl-applied copy.
	sdkRelease = "stackward-sdk"
	// sdkSA is the CCM's ServiceAccount (the pod's): the release's full
	// name; sdkApproverSA the approver's own.
	sdkSA         = sdkRelease
	sdkApproverSA = sdkRelease + "-approver"
	ns            = framework.ChartNamespace
	// instanceSelector selects every object the chart labels.
	instanceSelector = "app.kubernetes.io/instance=" + sdkRelease
	checksumKey      = "checksum/cloud-config"
)

// helmConfig is an action.Configuration for the lab's apiserver, as
// cluster-admin, keeping releases in Secrets like the helm CLI.
func helmConfig(t *testing.T, cp *framework.ControlPlane) *action.Configuration {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := writeKubeconfig(kubeconfig, cp.AdminConfig); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	namespace, cacheDir := ns, t.TempDir()
	flags.KubeConfig, flags.Namespace, flags.CacheDir = &kubeconfig, &namespace, &cacheDir
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, ns, "secret", func(format string, v ...any) { t.Logf("helm: "+format, v...) }); err != nil {
		t.Fatalf("helm action configuration: %v", err)
	}
	return cfg
}

// writeKubeconfig writes a kubeconfig for a rest.Config with client
// certificate or token credentials (what RESTClientGetter wants: a file).
func writeKubeconfig(path string, rc *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["lab"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: rc.CertData, ClientKeyData: rc.KeyData, Token: rc.BearerToken}
	kc.Contexts["lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "admin", Namespace: ns}
	kc.CurrentContext = "lab"
	return clientcmd.WriteToFile(*kc, path)
}

// chartValues are the release's values: cloud.conf as structured values,
// and a Deployment of two (the chart's default is a DaemonSet; this test
// later upgrades to one, so it covers both kinds and the switch).
func chartValues(region string) map[string]any {
	return map[string]any{
		"kind":     "Deployment",
		"replicas": 2,
		"cloudConfig": map[string]any{"config": map[string]any{
			"Global": map[string]any{
				"auth-url":                      "https://keystone.lab.invalid:5000/v3",
				"region":                        region,
				"application-credential-id":     "lab-credential",
				"application-credential-secret": "not-a-secret",
			},
		}},
	}
}

func TestSDKInstallUpgradeUninstall(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := helmConfig(t, cp)
	chrt, err := loader.Load(chartDir())
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	start := time.Now()
	defer func() { t.Logf("install, upgrades and uninstall took %v", time.Since(start).Round(time.Millisecond)) }()

	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.Timeout = sdkRelease, ns, 2*time.Minute
	rel, err := install.RunWithContext(ctx, chrt, chartValues("RegionOne"))
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Cleanup(func() { _, _ = action.NewUninstall(cfg).Run(sdkRelease) }) // if a step below fails
	if rel.Info.Status != "deployed" || !strings.Contains(rel.Info.Notes, "kubectl get csr") {
		t.Errorf("release status %q, notes:\n%s", rel.Info.Status, rel.Info.Notes)
	}

	var installChecksum string
	if !t.Run("install creates the chart's objects, labelled", func(t *testing.T) {
		objs := chartObjects(ctx, t, cp)
		for _, want := range []string{
			"ServiceAccount/kube-system/" + sdkSA, "ServiceAccount/kube-system/" + sdkApproverSA,
			"Secret/kube-system/" + sdkApproverSA + "-token",
			"Role/kube-system/stackward-sdk-approver", "RoleBinding/kube-system/stackward-sdk-approver",
			"Secret/kube-system/stackward-sdk-cloud-config",
			"ClusterRole//stackward-sdk-ccm", "ClusterRole//stackward-sdk-approver",
			"ClusterRoleBinding//stackward-sdk-ccm", "ClusterRoleBinding//stackward-sdk-approver",
			"Role/kube-system/stackward-sdk", "RoleBinding/kube-system/stackward-sdk",
			"PodDisruptionBudget/kube-system/stackward-sdk",
			"Deployment/kube-system/stackward-sdk",
		} {
			if !slices.Contains(objs, want) {
				t.Errorf("%s missing; objects labelled %s: %v", want, instanceSelector, objs)
			}
		}
		d, err := cp.Admin.AppsV1().Deployments(ns).Get(ctx, sdkRelease, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		installChecksum = d.Spec.Template.Annotations[checksumKey]
		if installChecksum == "" || *d.Spec.Replicas != 2 || !d.Spec.Template.Spec.HostNetwork {
			t.Errorf("deployment: checksum %q, replicas %d, hostNetwork %v", installChecksum, *d.Spec.Replicas, d.Spec.Template.Spec.HostNetwork)
		}
		if got := releaseSecrets(ctx, t, cp); got != 1 {
			t.Errorf("%d helm release secrets, want 1", got)
		}
	}) {
		return
	}

	t.Run("each ServiceAccount may do what its container needs, and no more", func(t *testing.T) {
		clients := map[string]kubernetes.Interface{}
		for _, name := range []string{sdkSA, sdkApproverSA} {
			saConfig, err := cp.ServiceAccountConfig(ctx, ns, name)
			if err != nil {
				t.Fatal(err)
			}
			saConfig.QPS, saConfig.Burst = 50, 100
			clients[name] = kubernetes.NewForConfigOrDie(saConfig)
		}
		checkAccess(ctx, t, cp, clients, sdkSA, sdkApproverSA)
		checkApprovals(ctx, t, cp, clients[sdkApproverSA], "")
	})

	// The approvals above pass because of one rule; without it they fail,
	// and the next helm upgrade puts it back.
	t.Run("without the signers rule the approver cannot approve", func(t *testing.T) {
		roles := cp.Admin.RbacV1().ClusterRoles()
		role, err := roles.Get(ctx, sdkRelease+"-approver", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The rule that approves (the CA bundle's attest rule on signers
		// stays: it lets the approver publish, not approve).
		kept := slices.DeleteFunc(slices.Clone(role.Rules), func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.Resources, "signers") && slices.Contains(r.Verbs, "approve")
		})
		if len(kept) != len(role.Rules)-1 {
			t.Fatalf("want exactly one signers rule with approve in %+v", role.Rules)
		}
		role.Rules = kept
		if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		saConfig, err := cp.ServiceAccountConfig(ctx, ns, sdkApproverSA)
		if err != nil {
			t.Fatal(err)
		}
		// RBAC changes reach the authorizer through an informer.
		sa := kubernetes.NewForConfigOrDie(saConfig)
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			r, err := sa.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Group: "certificates.k8s.io", Resource: "signers", Name: certificatesv1.KubeletServingSignerName, Verb: "approve"}},
			}, metav1.CreateOptions{})
			return err == nil && !r.Status.Allowed, nil
		})
		if err != nil {
			t.Fatalf("approve on the kubelet-serving signer still allowed after removing the rule: %v", err)
		}
		checkApprovals(ctx, t, cp, sa, "without-signers-rule")
	})

	upgrade := func(t *testing.T, vals map[string]any) {
		t.Helper()
		u := action.NewUpgrade(cfg)
		u.Namespace, u.Timeout = ns, 2*time.Minute
		if _, err := u.RunWithContext(ctx, sdkRelease, chrt, vals); err != nil {
			t.Fatalf("helm upgrade: %v", err)
		}
	}

	if !t.Run("upgrade with another cloud config rolls the pods", func(t *testing.T) {
		upgrade(t, chartValues("RegionTwo"))
		d, err := cp.Admin.AppsV1().Deployments(ns).Get(ctx, sdkRelease, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Spec.Template.Annotations[checksumKey]; got == "" || got == installChecksum {
			t.Errorf("checksum after upgrade %q, before %q: want a new one", got, installChecksum)
		}
		s, err := cp.Admin.CoreV1().Secrets(ns).Get(ctx, "stackward-sdk-cloud-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(s.Data["cloud.conf"]), `region = "RegionTwo"`) {
			t.Errorf("cloud.conf not updated:\n%s", s.Data["cloud.conf"])
		}
		role, err := cp.Admin.RbacV1().ClusterRoles().Get(ctx, sdkRelease+"-approver", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Equal(r.Resources, []string{"signers"}) && slices.Equal(r.ResourceNames, []string{certificatesv1.KubeletServingSignerName})
		}) {
			t.Errorf("helm upgrade did not restore the signers rule: %+v", role.Rules)
		}
	}) {
		return
	}

	// The operator's own Secret, which the chart must read (for the
	// checksum) and never own.
	operatorSecret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sdk-operator-cloud-config", Namespace: ns},
		StringData: map[string]string{"cloud.conf": "[Global]\nauth-url = https://keystone.lab.invalid:5000/v3\nregion = RegionOne\n"},
	}
	if _, err := cp.Admin.CoreV1().Secrets(ns).Create(ctx, operatorSecret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.CoreV1().Secrets(ns).Delete(context.Background(), operatorSecret.Name, metav1.DeleteOptions{})
	})
	dsValues := map[string]any{
		"kind":        "DaemonSet",
		"cloudConfig": map[string]any{"existingSecret": operatorSecret.Name},
	}

	var dsChecksum string
	if !t.Run("upgrade to a DaemonSet with an existing Secret replaces the Deployment", func(t *testing.T) {
		upgrade(t, dsValues)
		objs := chartObjects(ctx, t, cp)
		for _, gone := range []string{"Deployment/kube-system/stackward-sdk", "PodDisruptionBudget/kube-system/stackward-sdk", "Secret/kube-system/stackward-sdk-cloud-config"} {
			if slices.Contains(objs, gone) {
				t.Errorf("%s still there after the upgrade: %v", gone, objs)
			}
		}
		ds, err := cp.Admin.AppsV1().DaemonSets(ns).Get(ctx, sdkRelease, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ds.Spec.Template.Spec.Volumes[0].Secret; got == nil || got.SecretName != operatorSecret.Name {
			t.Errorf("cloud-config volume %+v, want Secret %s", ds.Spec.Template.Spec.Volumes[0], operatorSecret.Name)
		}
		dsChecksum = ds.Spec.Template.Annotations[checksumKey]
		if want := secretChecksum(ctx, t, cp, operatorSecret.Name); dsChecksum != want {
			t.Errorf("checksum %q, want %q (sha256 of the existing Secret's data)", dsChecksum, want)
		}
	}) {
		return
	}

	t.Run("upgrade after the existing Secret changed rolls the pods", func(t *testing.T) {
		s, err := cp.Admin.CoreV1().Secrets(ns).Get(ctx, operatorSecret.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Data["cloud.conf"] = []byte("[Global]\nauth-url = https://keystone.lab.invalid:5000/v3\nregion = RegionThree\n")
		if _, err := cp.Admin.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		upgrade(t, dsValues)
		ds, err := cp.Admin.AppsV1().DaemonSets(ns).Get(ctx, sdkRelease, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := ds.Spec.Template.Annotations[checksumKey]
		if got == dsChecksum || got != secretChecksum(ctx, t, cp, operatorSecret.Name) {
			t.Errorf("checksum %q (before %q) does not follow the Secret", got, dsChecksum)
		}
	})

	t.Run("uninstall leaves nothing behind", func(t *testing.T) {
		if _, err := action.NewUninstall(cfg).Run(sdkRelease); err != nil {
			t.Fatalf("helm uninstall: %v", err)
		}
		// Controllers' children (ReplicaSets, ControllerRevisions, Pods)
		// carry the labels too; the garbage collector removes them.
		var left []string
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			left = chartObjects(ctx, t, cp)
			return len(left) == 0, nil
		})
		if err != nil {
			t.Errorf("objects labelled %s left after uninstall: %v", instanceSelector, left)
		}
		if n := releaseSecrets(ctx, t, cp); n != 0 {
			t.Errorf("%d helm release secrets left", n)
		}
		if _, err := cp.Admin.CoreV1().Secrets(ns).Get(ctx, operatorSecret.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("the operator's Secret, which the chart does not own, is gone: %v", err)
		}
	})
}

// chartObjects lists, through discovery, every object of every listable
// kind carrying the release's instance label, as "Kind/namespace/name".
func chartObjects(ctx context.Context, t *testing.T, cp *framework.ControlPlane) []string {
	t.Helper()
	lists, err := cp.Admin.Discovery().ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		t.Fatalf("discovery: %v", err)
	}
	rc := rest.CopyConfig(cp.AdminConfig)
	rc.QPS, rc.Burst, rc.WarningHandler = 100, 200, rest.NoWarnings{}
	dyn := dynamic.NewForConfigOrDie(rc)
	var objs []string
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.APIResources {
			// Events carry no labels; listing ComponentStatuses probes
			// components the lab does not run.
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || r.Name == "events" || r.Name == "componentstatuses" {
				continue
			}
			items, err := dyn.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{LabelSelector: instanceSelector})
			if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
				continue
			}
			if err != nil {
				t.Fatalf("list %s: %v", gv.WithResource(r.Name), err)
			}
			for _, it := range items.Items {
				objs = append(objs, fmt.Sprintf("%s/%s/%s", r.Kind, it.GetNamespace(), it.GetName()))
			}
		}
	}
	sort.Strings(objs)
	return objs
}

// releaseSecrets counts Helm's release records of the release.
func releaseSecrets(ctx context.Context, t *testing.T, cp *framework.ControlPlane) int {
	t.Helper()
	l, err := cp.Admin.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + sdkRelease})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// secretChecksum is what the chart's checksum of an existing Secret must
// be: sha256 of Helm's toJson of its data (base64 values, sorted keys).
func secretChecksum(ctx context.Context, t *testing.T, cp *framework.ControlPlane, name string) string {
	t.Helper()
	s, err := cp.Admin.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data := map[string]string{}
	for k, v := range s.Data {
		data[k] = base64.StdEncoding.EncodeToString(v)
	}
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// checkAccess asks the apiserver what each ServiceAccount may do: itself
// (SelfSubjectAccessReview, with its TokenRequest token) and, for the
// signer rules, as cluster-admin on its behalf (SubjectAccessReview).
func checkAccess(ctx context.Context, t *testing.T, cp *framework.ControlPlane, clients map[string]kubernetes.Interface, ccm, approver string) {
	type attrs = authorizationv1.ResourceAttributes
	tests := []struct {
		name  string
		attrs attrs
		allow bool
		sa    string
	}{
		{"approver approves kubelet serving certificates", attrs{Group: "certificates.k8s.io", Resource: "signers", Name: "kubernetes.io/kubelet-serving", Verb: "approve"}, true, approver},
		{"approver does not approve kubelet client certificates", attrs{Group: "certificates.k8s.io", Resource: "signers", Name: "kubernetes.io/kube-apiserver-client-kubelet", Verb: "approve"}, false, approver},
		{"approver does not approve apiserver client certificates", attrs{Group: "certificates.k8s.io", Resource: "signers", Name: "kubernetes.io/kube-apiserver-client", Verb: "approve"}, false, approver},
		{"approver does not approve for every signer", attrs{Group: "certificates.k8s.io", Resource: "signers", Name: "*", Verb: "approve"}, false, approver},
		{"approver updates CSR approvals", attrs{Group: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: "approval", Verb: "update"}, true, approver},
		{"approver does not sign CSRs", attrs{Group: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: "status", Verb: "update"}, false, approver},
		{"ccm patches node status", attrs{Resource: "nodes", Subresource: "status", Verb: "patch"}, true, ccm},
		{"ccm initializes nodes", attrs{Resource: "nodes", Verb: "update"}, true, ccm},
		{"ccm deletes nodes whose server is gone", attrs{Resource: "nodes", Verb: "delete"}, true, ccm},
		{"ccm does not create nodes", attrs{Resource: "nodes", Verb: "create"}, false, ccm},
		{"ccm watches Services for load balancers", attrs{Resource: "services", Verb: "watch"}, true, ccm},
		{"ccm writes Services only through status", attrs{Namespace: "default", Resource: "services", Verb: "update"}, false, ccm},
		{"ccm patches Service status", attrs{Namespace: "default", Resource: "services", Subresource: "status", Verb: "patch"}, true, ccm},
		{"ccm reads the kube-system Namespace (the cluster UID)", attrs{Resource: "namespaces", Name: "kube-system", Verb: "get"}, true, ccm},
		{"ccm cannot read other Namespaces", attrs{Resource: "namespaces", Name: "default", Verb: "get"}, false, ccm},
		{"ccm cannot read secrets in its namespace", attrs{Namespace: ns, Resource: "secrets", Verb: "get"}, false, ccm},
		{"ccm cannot list secrets anywhere", attrs{Resource: "secrets", Verb: "list"}, false, ccm},
		{"ccm renews the CCM's lease", attrs{Namespace: "kube-system", Group: "coordination.k8s.io", Resource: "leases", Name: "cloud-controller-manager", Verb: "update"}, true, ccm},
		{"approver renews the approver's lease", attrs{Namespace: "kube-system", Group: "coordination.k8s.io", Resource: "leases", Name: "stackward-approver", Verb: "update"}, true, approver},
		{"ccm cannot take kube-controller-manager's lease", attrs{Namespace: "kube-system", Group: "coordination.k8s.io", Resource: "leases", Name: "kube-controller-manager", Verb: "update"}, false, ccm},
		{"ccm reads the apiserver's authentication ConfigMap", attrs{Namespace: "kube-system", Resource: "configmaps", Name: "extension-apiserver-authentication", Verb: "get"}, true, ccm},
		{"ccm cannot read other ConfigMaps", attrs{Namespace: "kube-system", Resource: "configmaps", Name: "kubeadm-config", Verb: "get"}, false, ccm},
		{"ccm cannot create pods", attrs{Namespace: ns, Resource: "pods", Verb: "create"}, false, ccm},
		{"ccm cannot mint ServiceAccount tokens", attrs{Namespace: ns, Resource: "serviceaccounts", Subresource: "token", Verb: "create"}, false, ccm},
		{"approver cannot write Nodes", attrs{Resource: "nodes", Verb: "update"}, false, approver},
		{"approver cannot patch Node status", attrs{Resource: "nodes", Subresource: "status", Verb: "patch"}, false, approver},
		{"approver cannot delete Nodes", attrs{Resource: "nodes", Verb: "delete"}, false, approver},
		{"approver reads Nodes", attrs{Resource: "nodes", Verb: "get"}, true, approver},
		{"approver cannot renew the CCM's lease", attrs{Namespace: "kube-system", Group: "coordination.k8s.io", Resource: "leases", Name: "cloud-controller-manager", Verb: "update"}, false, approver},
		{"approver cannot read secrets", attrs{Namespace: ns, Resource: "secrets", Verb: "get"}, false, approver},
		{"ccm does not approve kubelet serving certificates", attrs{Group: "certificates.k8s.io", Resource: "signers", Name: "kubernetes.io/kubelet-serving", Verb: "approve"}, false, ccm},
		{"ccm does not update CSR approvals", attrs{Group: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: "approval", Verb: "update"}, false, ccm},
		{"ccm cannot renew the approver's lease", attrs{Namespace: "kube-system", Group: "coordination.k8s.io", Resource: "leases", Name: "stackward-approver", Verb: "update"}, false, ccm},
		{"ccm cannot escalate through RBAC", attrs{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "bind"}, false, ccm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.attrs
			user := "system:serviceaccount:" + ns + ":" + tt.sa
			self, err := clients[tt.sa].AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if self.Status.Allowed != tt.allow {
				t.Errorf("SelfSubjectAccessReview %+v: allowed %v, want %v (%s)", a, self.Status.Allowed, tt.allow, self.Status.Reason)
			}
			if a.Resource != "signers" {
				return
			}
			sar, err := cp.Admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{
					ResourceAttributes: &a, User: user,
					Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
				},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if sar.Status.Allowed != tt.allow {
				t.Errorf("SubjectAccessReview for %s %+v: allowed %v, want %v", user, a, sar.Status.Allowed, tt.allow)
			}
		})
	}
}

// checkApprovals does what the approver does, with the ServiceAccount's
// token: approving a kubelet serving CSR succeeds, approving a kubelet
// client CSR is forbidden by the apiserver's signer check.
//
// With variant "without-signers-rule" (the rule removed) both are forbidden.
func checkApprovals(ctx context.Context, t *testing.T, cp *framework.ControlPlane, sa kubernetes.Interface, variant string) {
	tests := []struct {
		name   string
		signer string
		cn     string
		usages []certificatesv1.KeyUsage
		allow  bool
	}{
		{"approving a kubelet serving CSR succeeds", certificatesv1.KubeletServingSignerName, "system:node:chart-sdk-node",
			[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}, true},
		// Not a node's name: kube-controller-manager would approve a node
		// client certificate the admin asks for before the test could try.
		{"approving a kubelet client CSR is forbidden", certificatesv1.KubeAPIServerClientKubeletSignerName, "chart-sdk-client",
			[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}, false},
	}
	if variant != "" {
		tests = tests[:1]
		tests[0].name, tests[0].allow = "approving a kubelet serving CSR is forbidden", false
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := strings.TrimSuffix(fmt.Sprintf("chart-sdk-%d-%s", i, variant), "-")
			csr := &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: certificatesv1.CertificateSigningRequestSpec{
					Request:    csrPEM(t, tt.cn, tt.signer == certificatesv1.KubeletServingSignerName),
					SignerName: tt.signer,
					Usages:     tt.usages,
				},
			}
			if _, err := cp.Admin.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = cp.Admin.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), name, metav1.DeleteOptions{})
			})
			got, err := sa.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the ServiceAccount cannot read the CSR: %v", err)
			}
			got.Status.Conditions = append(got.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
				Reason: "ChartRBACTest", Message: "approved by the chart's ServiceAccount",
			})
			_, err = sa.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, got, metav1.UpdateOptions{})
			switch {
			case tt.allow && err != nil:
				t.Errorf("approval: %v", err)
			case !tt.allow && !apierrors.IsForbidden(err):
				t.Errorf("approval of %s: err %v, want Forbidden", tt.signer, err)
			}
		})
	}
}

// csrPEM is a PKCS#10 request from a node (O=system:nodes), with an IP SAN
// when it is for a serving certificate.
func csrPEM(t *testing.T, cn string, serving bool) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}}}
	if serving {
		tmpl.IPAddresses = []net.IP{net.ParseIP(framework.NodeIP(200))}
		tmpl.DNSNames = []string{strings.TrimPrefix(cn, "system:node:")}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}
