package capi

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/stackward/stackward/pkg/nodeboot"
	"github.com/stackward/stackward/pkg/pki"
)

// clusterName is what clusterctl substitutes for ${CLUSTER_NAME}.
const clusterName = "prod-eu1"

// readManifest reads a file of this directory with clusterctl's variables
// substituted, failing on any variable left.
func readManifest(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.ReplaceAll(data, []byte("${CLUSTER_NAME}"), []byte(clusterName))
	if v := regexp.MustCompile(`\$\{[A-Z_]+\}`).Find(data); v != nil {
		t.Fatalf("%s: variable %s has no value in this test", name, v)
	}
	return data
}

// decodeStrict decodes YAML into out case-sensitively, refusing unknown
// and duplicate fields, as the apiserver's strict field validation does.
func decodeStrict(t *testing.T, name string, data []byte, out any) {
	t.Helper()
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	strict, err := kjson.UnmarshalStrict(j, out, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, e := range strict {
		t.Errorf("%s: %v", name, e)
	}
}

func controlPlanePatch(t *testing.T) *controlplanev1.KubeadmControlPlane {
	t.Helper()
	var kcp controlplanev1.KubeadmControlPlane
	decodeStrict(t, "kubeadmcontrolplane-patch.yaml", readManifest(t, "kubeadmcontrolplane-patch.yaml"), &kcp)
	if kcp.APIVersion != controlplanev1.GroupVersion.String() || kcp.Kind != "KubeadmControlPlane" {
		t.Fatalf("kubeadmcontrolplane-patch.yaml is %s %s, want %s KubeadmControlPlane", kcp.APIVersion, kcp.Kind, controlplanev1.GroupVersion)
	}
	return &kcp
}

func workerPatch(t *testing.T) *bootstrapv1.KubeadmConfigTemplate {
	t.Helper()
	var kct bootstrapv1.KubeadmConfigTemplate
	decodeStrict(t, "kubeadmconfigtemplate-patch.yaml", readManifest(t, "kubeadmconfigtemplate-patch.yaml"), &kct)
	if kct.APIVersion != bootstrapv1.GroupVersion.String() || kct.Kind != "KubeadmConfigTemplate" {
		t.Fatalf("kubeadmconfigtemplate-patch.yaml is %s %s, want %s KubeadmConfigTemplate", kct.APIVersion, kct.Kind, bootstrapv1.GroupVersion)
	}
	return &kct
}

func args(list []bootstrapv1.Arg) map[string]string {
	m := map[string]string{}
	for _, a := range list {
		v := ""
		if a.Value != nil {
			v = *a.Value
		}
		m[a.Name] = v
	}
	return m
}

// TestControlPlanePatchLeavesKubeletServingToStackward checks what the
// patch is for: the apiserver verifies kubelets with the kubelet-serving
// CA delivered from the management cluster's Secret, kube-controller-manager
// signs the three other signers with the cluster CA and not
// kubelet-serving, and no host receives the serving CA's key.
func TestControlPlanePatchLeavesKubeletServingToStackward(t *testing.T) {
	spec := controlPlanePatch(t).Spec.KubeadmConfigSpec
	cc := spec.ClusterConfiguration

	caFile := args(cc.APIServer.ExtraArgs)["kubelet-certificate-authority"]
	delivered := slices.IndexFunc(spec.Files, func(f bootstrapv1.File) bool { return f.Path == caFile })
	if caFile == "" || delivered < 0 {
		t.Fatalf("apiserver kubelet-certificate-authority %q is not a file the patch delivers", caFile)
	}
	src := spec.Files[delivered].ContentFrom.Secret
	if src.Name != clusterName+"-kubelet-serving-ca" || src.Key != pki.CertFile {
		t.Errorf("the kubelet-serving CA comes from Secret %s key %s, want %s-kubelet-serving-ca key %s", src.Name, src.Key, clusterName, pki.CertFile)
	}
	for _, f := range spec.Files {
		if strings.HasSuffix(f.Path, ".key") || f.ContentFrom.Secret.Key == pki.KeyFile {
			t.Errorf("file %s delivers a private key to every control-plane host", f.Path)
		}
	}

	kcm := args(cc.ControllerManager.ExtraArgs)
	want := map[string]string{
		"cloud-provider":            "external",
		"cluster-signing-cert-file": "", "cluster-signing-key-file": "",
		"cluster-signing-kubelet-client-cert-file": "/etc/kubernetes/pki/ca.crt", "cluster-signing-kubelet-client-key-file": "/etc/kubernetes/pki/ca.key",
		"cluster-signing-kube-apiserver-client-cert-file": "/etc/kubernetes/pki/ca.crt", "cluster-signing-kube-apiserver-client-key-file": "/etc/kubernetes/pki/ca.key",
		"cluster-signing-legacy-unknown-cert-file": "/etc/kubernetes/pki/ca.crt", "cluster-signing-legacy-unknown-key-file": "/etc/kubernetes/pki/ca.key",
	}
	for k, v := range want {
		if got, ok := kcm[k]; !ok || got != v {
			t.Errorf("kube-controller-manager --%s=%q (set: %v), want %q", k, got, ok, v)
		}
	}
	for k := range kcm {
		if strings.HasPrefix(k, "cluster-signing-kubelet-serving") {
			t.Errorf("kube-controller-manager has --%s: it would sign kubelet serving certificates too", k)
		}
	}
	for name, nr := range map[string]bootstrapv1.NodeRegistrationOptions{"initConfiguration": spec.InitConfiguration.NodeRegistration, "joinConfiguration": spec.JoinConfiguration.NodeRegistration} {
		if got := args(nr.KubeletExtraArgs)["cloud-provider"]; got != "external" {
			t.Errorf("%s kubelet --cloud-provider=%q, want external", name, got)
		}
	}
}

// TestEveryKubeletGetsServerTLSBootstrap: each kubeadm run of the patches
// (init, control-plane join, worker join) points at a patch directory
// holding a KubeletConfiguration patch the kubelet's own API accepts, with
// serverTLSBootstrap true.
func TestEveryKubeletGetsServerTLSBootstrap(t *testing.T) {
	kcp := controlPlanePatch(t).Spec.KubeadmConfigSpec
	kct := workerPatch(t).Spec.Template.Spec
	if got := args(kct.JoinConfiguration.NodeRegistration.KubeletExtraArgs)["cloud-provider"]; got != "external" {
		t.Errorf("worker kubelet --cloud-provider=%q, want external", got)
	}
	for _, tc := range []struct {
		name  string
		dir   string
		files []bootstrapv1.File
	}{
		{"kubeadm init", kcp.InitConfiguration.Patches.Directory, kcp.Files},
		{"kubeadm join --control-plane", kcp.JoinConfiguration.Patches.Directory, kcp.Files},
		{"kubeadm join of a worker", kct.JoinConfiguration.Patches.Directory, kct.Files},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.dir == "" {
				t.Fatal("no patches.directory")
			}
			n := 0
			for _, f := range tc.files {
				if path.Dir(f.Path) != tc.dir {
					continue
				}
				// kubeadm's patch file names: target[suffix][+patchtype].extension
				if !regexp.MustCompile(`^kubeletconfiguration[0-9]*(\+strategic)?\.yaml$`).MatchString(path.Base(f.Path)) {
					t.Errorf("%s is not a kubeletconfiguration patch kubeadm reads", f.Path)
					continue
				}
				if _, err := nodeboot.CheckKubeletConfiguration([]byte(f.Content), f.Path); err != nil {
					t.Error(err)
				}
				n++
			}
			if n != 1 {
				t.Errorf("%d kubeletconfiguration patches in %s, want 1", n, tc.dir)
			}
		})
	}
}

// kubeadmDoc is a kubeadm.k8s.io/v1beta4 document made of a Cluster API
// v1beta2 struct, whose JSON is kubeadm's own there (Cluster API converts
// field for field), plus the fields Cluster API fills in from the Cluster
// and the Machine.
func kubeadmDoc(t *testing.T, kind string, v any, extra map[string]any) map[string]any {
	t.Helper()
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(j, &m); err != nil {
		t.Fatal(err)
	}
	m["apiVersion"], m["kind"] = "kubeadm.k8s.io/v1beta4", kind
	for k, x := range extra {
		m[k] = x
	}
	return m
}

// TestKubeadmAcceptsTheConfiguration renders the kubeadm configurations the
// bootstrap provider would write for the first control-plane machine, a
// further one and a worker. Each is checked here, and by `kubeadm config
// validate` of the pinned kubeadm when STACKWARD_TOOLS_DIR holds it (make
// unit / the e2e tool cache).
func TestKubeadmAcceptsTheConfiguration(t *testing.T) {
	kcp := controlPlanePatch(t).Spec.KubeadmConfigSpec
	kct := workerPatch(t).Spec.Template.Spec
	discovery := map[string]any{"bootstrapToken": map[string]any{
		"apiServerEndpoint": "192.0.2.100:6443", "token": "abcdef.0123456789abcdef",
		"caCertHashes": []string{"sha256:" + strings.Repeat("0", 64)},
	}}
	nodeName := func(doc map[string]any, name string) map[string]any {
		nr, _ := doc["nodeRegistration"].(map[string]any)
		nr["name"] = name
		return doc
	}
	configs := map[string][]map[string]any{
		"init": {
			nodeName(kubeadmDoc(t, "InitConfiguration", kcp.InitConfiguration, nil), "prod-eu1-control-plane-abcde"),
			kubeadmDoc(t, "ClusterConfiguration", kcp.ClusterConfiguration, map[string]any{
				"kubernetesVersion": "v1.37.2", "clusterName": clusterName, "controlPlaneEndpoint": "192.0.2.100:6443",
				"networking": map[string]any{"serviceSubnet": "10.96.0.0/12", "podSubnet": "10.244.0.0/16", "dnsDomain": "cluster.local"},
			}),
		},
		"join-control-plane": {nodeName(kubeadmDoc(t, "JoinConfiguration", kcp.JoinConfiguration, map[string]any{
			"discovery": discovery, "controlPlane": map[string]any{"localAPIEndpoint": map[string]any{"advertiseAddress": "10.6.0.12", "bindPort": 6443}},
		}), "prod-eu1-control-plane-fghij")},
		"join-worker": {nodeName(kubeadmDoc(t, "JoinConfiguration", kct.JoinConfiguration, map[string]any{"discovery": discovery}), "prod-eu1-md-0-klmno")},
	}
	tools := os.Getenv("STACKWARD_TOOLS_DIR")
	kubeadm := filepath.Join(tools, "kubeadm")
	if _, err := os.Stat(kubeadm); tools == "" || err != nil {
		t.Logf("no kubeadm in STACKWARD_TOOLS_DIR=%q: checking the documents without it", tools)
		kubeadm = ""
	}
	for name, docs := range configs {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			for _, d := range docs {
				y, err := yaml.Marshal(d)
				if err != nil {
					t.Fatal(err)
				}
				out.WriteString("---\n")
				out.Write(y)
				// Nothing Cluster API-only leaks into kubeadm's document: it
				// decodes strictly back into the Cluster API type.
				checkRoundTrip(t, d)
			}
			if kubeadm == "" {
				return
			}
			file := filepath.Join(t.TempDir(), name+".yaml")
			if err := os.WriteFile(file, out.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			if msg, err := exec.Command(kubeadm, "config", "validate", "--config", file).CombinedOutput(); err != nil {
				t.Errorf("kubeadm config validate: %v\n%s\n%s", err, msg, out.String())
			}
		})
	}
}

func checkRoundTrip(t *testing.T, doc map[string]any) {
	t.Helper()
	var target any
	switch doc["kind"] {
	case "InitConfiguration":
		target = &bootstrapv1.InitConfiguration{}
	case "ClusterConfiguration":
		target = &bootstrapv1.ClusterConfiguration{}
	case "JoinConfiguration":
		target = &bootstrapv1.JoinConfiguration{}
	}
	// Drop what kubeadm has and Cluster API takes from elsewhere.
	stripped := map[string]any{}
	for k, v := range doc {
		switch k {
		case "apiVersion", "kind", "kubernetesVersion", "clusterName", "networking":
			continue
		}
		stripped[k] = v
	}
	y, err := yaml.Marshal(stripped)
	if err != nil {
		t.Fatal(err)
	}
	decodeStrict(t, doc["kind"].(string), y, target)
}

// helmChartProxy is the part of CAAPH's addons.cluster.x-k8s.io/v1alpha1
// HelmChartProxy the file uses (CAAPH's Go module is not a dependency).
type helmChartProxy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ClusterSelector metav1.LabelSelector `json:"clusterSelector"`
		RepoURL         string               `json:"repoURL"`
		ChartName       string               `json:"chartName"`
		Version         string               `json:"version"`
		ReleaseName     string               `json:"releaseName"`
		Namespace       string               `json:"namespace"`
		ValuesTemplate  string               `json:"valuesTemplate"`
	} `json:"spec"`
}

// renderValues renders the HelmChartProxy's valuesTemplate as CAAPH does:
// Go text/template with Sprig, over the Cluster as an unstructured object.
func renderValues(t *testing.T, hcp *helmChartProxy, cluster map[string]any) map[string]any {
	t.Helper()
	tpl, err := template.New("values").Funcs(sprig.TxtFuncMap()).Option("missingkey=error").Parse(hcp.Spec.ValuesTemplate)
	if err != nil {
		t.Fatalf("valuesTemplate: %v", err)
	}
	var out bytes.Buffer
	if err := tpl.Execute(&out, map[string]any{"Cluster": cluster}); err != nil {
		t.Fatalf("valuesTemplate: %v", err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(out.Bytes(), &values); err != nil {
		t.Fatalf("rendered values: %v\n%s", err, out.String())
	}
	return values
}
