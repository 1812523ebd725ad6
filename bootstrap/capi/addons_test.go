package capi

import (
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"

	"github.com/stackward/stackward/pkg/pki"
)

// workloadCluster is a Cluster as CAAPH hands it to valuesTemplate.
func workloadCluster() map[string]any {
	return map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2",
		"kind":       "Cluster",
		"metadata": map[string]any{
			"name": clusterName, "namespace": "tenants",
			"labels": map[string]any{"stackward.io/ccm": "true"},
		},
		"spec": map[string]any{
			"clusterNetwork": map[string]any{"pods": map[string]any{"cidrBlocks": []any{"10.244.0.0/16"}}},
		},
	}
}

func helmChartProxyFile(t *testing.T) *helmChartProxy {
	t.Helper()
	var hcp helmChartProxy
	decodeStrict(t, "helmchartproxy.yaml", readManifest(t, "helmchartproxy.yaml"), &hcp)
	if hcp.APIVersion != "addons.cluster.x-k8s.io/v1alpha1" || hcp.Kind != "HelmChartProxy" {
		t.Fatalf("helmchartproxy.yaml is %s %s", hcp.APIVersion, hcp.Kind)
	}
	return &hcp
}

// TestHelmChartProxyInstallsTheChartForTheCluster renders the chart (this
// repository's, with Helm's SDK, client-only) with the values CAAPH would
// give it for a selected cluster: the cluster's name is the CCM's
// --cluster-name, CAPO's kube-system/cloud-config Secret is the cloud.conf
// as it is, the approver signs with the Secret the ClusterResourceSet
// delivers and publishes the CA bundle.
func TestHelmChartProxyInstallsTheChartForTheCluster(t *testing.T) {
	hcp := helmChartProxyFile(t)
	cluster := workloadCluster()
	sel, err := metav1.LabelSelectorAsSelector(&hcp.Spec.ClusterSelector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set{"stackward.io/ccm": "true"}) || sel.Empty() {
		t.Errorf("clusterSelector %v does not select the labelled clusters (or selects all)", sel)
	}
	if hcp.Spec.ChartName != "stackward" || hcp.Spec.Namespace != pki.SecretNamespace {
		t.Errorf("chart %q in namespace %q, want stackward in %s (where the CA Secret is)", hcp.Spec.ChartName, hcp.Spec.Namespace, pki.SecretNamespace)
	}
	values := renderValues(t, hcp, cluster)

	chrt, err := loader.Load(filepath.Join("..", "..", "charts", "stackward"))
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.ClientOnly, install.DryRun = true, true
	install.ReleaseName, install.Namespace = hcp.Spec.ReleaseName, hcp.Spec.Namespace
	rel, err := install.Run(chrt, values) // checks values.schema.json too
	if err != nil {
		t.Fatalf("helm template with the rendered values: %v", err)
	}
	for _, want := range []string{
		"--cluster-name=" + clusterName,
		"secretName: cloud-config",
		"--cloud-config=/etc/stackward/cloud.conf",
		"--sign-with-ca-dir=/etc/stackward-signer",
		"secretName: " + pki.SecretName,
		"--ca-bundle-configmap=kube-system/stackward-kubelet-serving-ca",
	} {
		if !strings.Contains(rel.Manifest, want) {
			t.Errorf("the rendered chart lacks %q", want)
		}
	}
}

// TestClusterResourceSetDeliversTheSignersSecret: the ClusterResourceSet
// decodes strictly with Cluster API's v1beta2 type, selects the clusters the
// HelmChartProxy installs to, and carries a Secret (the manifest of pki
// export, kube-system/stackward-kubelet-serving-ca).
func TestClusterResourceSetDeliversTheSignersSecret(t *testing.T) {
	var crs addonsv1.ClusterResourceSet
	decodeStrict(t, "clusterresourceset.yaml", readManifest(t, "clusterresourceset.yaml"), &crs)
	if crs.APIVersion != addonsv1.GroupVersion.String() || crs.Kind != "ClusterResourceSet" {
		t.Fatalf("clusterresourceset.yaml is %s %s", crs.APIVersion, crs.Kind)
	}
	if got, want := metav1.FormatLabelSelector(&crs.Spec.ClusterSelector), metav1.FormatLabelSelector(&helmChartProxyFile(t).Spec.ClusterSelector); got != want {
		t.Errorf("ClusterResourceSet selects %s, the HelmChartProxy %s", got, want)
	}
	if crs.Spec.Strategy != string(addonsv1.ClusterResourceSetStrategyReconcile) {
		t.Errorf("strategy %q: a rotation's new Secret would never reach the cluster", crs.Spec.Strategy)
	}
	if len(crs.Spec.Resources) != 1 || crs.Spec.Resources[0].Kind != string(addonsv1.SecretClusterResourceSetResourceKind) {
		t.Errorf("resources %+v, want the one Secret holding the exported manifest", crs.Spec.Resources)
	}
}
