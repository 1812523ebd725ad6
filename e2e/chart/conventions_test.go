//go:build e2e

package chart

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// TestChartConventions checks what each ci values file for the chart's
// conventions (extraEnv, hostAliases, extra volumes, digests, names and
// labels, monitors) does to the rendered objects.
func TestChartConventions(t *testing.T) {
	files := ciValuesFiles(t)
	tests := []struct {
		name  string
		file  string
		check func(t *testing.T, r rendered)
	}{
		{"extraEnv reaches both containers and ccm.extraEnv only the CCM", "proxy", func(t *testing.T, r rendered) {
			for _, c := range r.pod.Spec.Containers {
				names := envNames(c)
				if !slices.Contains(names, "HTTPS_PROXY") || !slices.Contains(names, "NO_PROXY") {
					t.Errorf("container %s env %v lacks HTTPS_PROXY/NO_PROXY", c.Name, names)
				}
				if got := slices.Contains(names, "GODEBUG"); got != (c.Name == "ccm") {
					t.Errorf("container %s has GODEBUG: %v", c.Name, got)
				}
			}
		}},
		{"hostAliases become the pod's /etc/hosts entries", "proxy", func(t *testing.T, r rendered) {
			want := []corev1.HostAlias{{IP: "192.0.2.20", Hostnames: []string{"keystone.example.com"}}, {IP: "2001:db8::20", Hostnames: []string{"keystone.example.com", "keystone"}}}
			if !slices.EqualFunc(r.pod.Spec.HostAliases, want, func(a, b corev1.HostAlias) bool { return a.IP == b.IP && slices.Equal(a.Hostnames, b.Hostnames) }) {
				t.Errorf("hostAliases %+v, want %+v", r.pod.Spec.HostAliases, want)
			}
		}},
		{"an extra volume is mounted read-only into both containers", "proxy", func(t *testing.T, r rendered) {
			if !slices.ContainsFunc(r.pod.Spec.Volumes, func(v corev1.Volume) bool {
				return v.Name == "keystone-ca" && v.ConfigMap != nil && v.ConfigMap.Name == "keystone-ca"
			}) {
				t.Errorf("no keystone-ca ConfigMap volume in %+v", r.pod.Spec.Volumes)
			}
			for _, c := range r.pod.Spec.Containers {
				if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
					return m.Name == "keystone-ca" && m.MountPath == "/etc/stackward-ca" && m.ReadOnly
				}) {
					t.Errorf("container %s mounts %+v", c.Name, c.VolumeMounts)
				}
			}
		}},
		{"a digest replaces the tag in the image reference", "digest", func(t *testing.T, r rendered) {
			want := map[string]string{
				"ccm":      "registry.example.com/stackward/stackward-ccm@sha256:0d3c5a2f6e8b1c4d7a9e2f5b8c1d4e7a0b3c6d9e2f5a8b1c4d7e0a3b6c9d2e5f",
				"approver": "registry.example.com/stackward/stackward-approver@sha256:9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b",
			}
			for _, c := range r.pod.Spec.Containers {
				if c.Image != want[c.Name] {
					t.Errorf("container %s image %q, want %q", c.Name, c.Image, want[c.Name])
				}
			}
		}},
		{"fullnameOverride names every object", "digest", func(t *testing.T, r rendered) {
			for _, o := range r.objects {
				if !strings.HasPrefix(o.Metadata.Name, "occm") {
					t.Errorf("%s %s is not named after fullnameOverride occm", o.Kind, o.Metadata.Name)
				}
			}
		}},
		{"nameOverride and commonLabels label every object, podLabels win on the pods", "global", func(t *testing.T, r rendered) {
			for _, o := range r.objects {
				l := o.Metadata.Labels
				if l["example.com/team"] != "platform" || l["example.com/cost-center"] != "4711" || l["app.kubernetes.io/name"] != "openstack-ccm" {
					t.Errorf("%s %s labels %v", o.Kind, o.Metadata.Name, l)
				}
				if (o.Kind == "Deployment" || o.Kind == "DaemonSet") && !strings.HasPrefix(o.Metadata.Name, "stackward-openstack-ccm") {
					t.Errorf("%s %s: want the release name and nameOverride", o.Kind, o.Metadata.Name)
				}
			}
			// podLabels win over commonLabels on the pods.
			if l := r.pod.Labels; l["app.kubernetes.io/component"] != "cloud-controller-manager" || l["example.com/team"] != "control-plane" || l["example.com/cost-center"] != "4711" {
				t.Errorf("pod labels %v", l)
			}
		}},
		{"commonAnnotations annotate every object and the pods, keeping the chart's own annotations", "global", func(t *testing.T, r rendered) {
			for _, o := range r.objects {
				if a := o.Metadata.Annotations; a["example.com/runbook"] != "https://runbooks.example.com/stackward" || a["example.com/owner"] != "platform-team" {
					t.Errorf("%s %s annotations %v", o.Kind, o.Metadata.Name, a)
				}
			}
			// podAnnotations win over commonAnnotations on the pods, and the
			// config checksums that roll them stay.
			a := r.pod.Annotations
			if a["example.com/owner"] != "control-plane-team" || a["example.com/runbook"] != "https://runbooks.example.com/stackward" {
				t.Errorf("pod annotations %v", a)
			}
			for _, k := range []string{"checksum/cloud-config", "checksum/approver-config"} {
				if a[k] == "" {
					t.Errorf("pod annotations %v lack %s", a, k)
				}
			}
			// A token Secret still names its ServiceAccount, or the token controller never fills it.
			if len(r.tokens) == 0 {
				t.Fatal("no ServiceAccount token Secret rendered")
			}
			for _, s := range r.tokens {
				if s.Annotations[corev1.ServiceAccountNameKey] == "" || s.Annotations["example.com/owner"] != "platform-team" {
					t.Errorf("token Secret %s annotations %v", s.Name, s.Annotations)
				}
			}
		}},
		{"a PodMonitor scrapes with the operator's token Secret and relabels", "podmonitor", func(t *testing.T, r rendered) {
			if r.kinds["PodMonitor"] != 1 || r.kinds["ServiceMonitor"] != 0 || r.kinds["Service"] != 0 {
				t.Errorf("kinds %v: want one PodMonitor and no ServiceMonitor or Service", r.kinds)
			}
			// The metrics-reader ClusterRole is always there (any scraper may be bound to it); its
			// ServiceAccount and token are not when the operator brings a token.
			if slices.ContainsFunc(r.objects, func(o object) bool {
				return strings.Contains(o.Metadata.Name, "metrics-reader") && (o.Kind == "ServiceAccount" || o.Kind == "Secret")
			}) {
				t.Errorf("a metrics-reader ServiceAccount or token was created although authorization.secretName is set")
			}
			pm := objectDoc(t, r, "PodMonitor")
			for _, want := range []string{"name: prometheus-metrics-token", "type: Bearer", "__meta_kubernetes_pod_node_name", "action: drop"} {
				if !strings.Contains(pm, want) {
					t.Errorf("PodMonitor lacks %q:\n%s", want, pm)
				}
			}
		}},
		{"a ServiceMonitor sends the chart's metrics-reader token, which may only GET /metrics", "servicemonitor", func(t *testing.T, r rendered) {
			sm := objectDoc(t, r, "ServiceMonitor")
			if strings.Contains(sm, "bearerTokenFile") || !strings.Contains(sm, "name: stackward-metrics-reader-token") {
				t.Errorf("ServiceMonitor does not use authorization with the metrics-reader token:\n%s", sm)
			}
			var role rbacv1.ClusterRole
			for _, o := range r.objects {
				if o.Kind == "ClusterRole" && o.Metadata.Name == "stackward-metrics-reader" {
					mustUnmarshalStrict(t, o.doc, &role)
				}
			}
			want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
			if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].NonResourceURLs, want[0].NonResourceURLs) || !slices.Equal(role.Rules[0].Verbs, want[0].Verbs) ||
				len(role.Rules[0].Resources) > 0 {
				t.Errorf("metrics-reader rules %+v, want %+v", role.Rules, want)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file, ok := files[tt.file]
			if !ok {
				t.Fatalf("no ci/%s-values.yaml", tt.file)
			}
			tt.check(t, render(t, file))
		})
	}
}

func envNames(c corev1.Container) []string {
	var names []string
	for _, e := range c.Env {
		names = append(names, e.Name)
	}
	return names
}

// objectDoc is the one rendered document of a kind.
func objectDoc(t *testing.T, r rendered, kind string) string {
	t.Helper()
	for _, o := range r.objects {
		if o.Kind == kind {
			return o.doc
		}
	}
	t.Fatalf("no %s rendered (kinds %v)", kind, r.kinds)
	return ""
}

// TestMonitorsAreRenderedOnlyWhereTheirAPIIs: a monitor of a kind the
// apiserver does not serve is skipped (Capabilities), unless forced.
func TestMonitorsAreRenderedOnlyWhereTheirAPIIs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want map[string]int
	}{
		{"a ServiceMonitor without the API is skipped with its Service", []string{"--set", "serviceMonitor.enabled=true"}, map[string]int{"ServiceMonitor": 0, "Service": 0}},
		{"a ServiceMonitor is rendered where the API is served", []string{"--set", "serviceMonitor.enabled=true", "--api-versions", "monitoring.coreos.com/v1/ServiceMonitor"}, map[string]int{"ServiceMonitor": 1, "Service": 1}},
		{"skipAPICheck renders a ServiceMonitor without the API", []string{"--set", "serviceMonitor.enabled=true,serviceMonitor.skipAPICheck=true"}, map[string]int{"ServiceMonitor": 1, "Service": 1}},
		{"a PodMonitor is rendered where the API is served", []string{"--set", "podMonitor.enabled=true", "--api-versions", "monitoring.coreos.com/v1/PodMonitor"}, map[string]int{"PodMonitor": 1, "ServiceMonitor": 0}},
		{"a PodMonitor is skipped where only ServiceMonitors are served", []string{"--set", "podMonitor.enabled=true", "--api-versions", "monitoring.coreos.com/v1/ServiceMonitor"}, map[string]int{"PodMonitor": 0, "ServiceMonitor": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := render(t, "", tt.args...)
			for kind, n := range tt.want {
				if r.kinds[kind] != n {
					t.Errorf("%d %s, want %d (kinds %v)", r.kinds[kind], kind, n, r.kinds)
				}
			}
		})
	}
	t.Run("a ServiceMonitor and a PodMonitor together are refused", func(t *testing.T) {
		_, stderr, err := helm(t, "helm3", "template", "x", chartDir(), "--set", "serviceMonitor.enabled=true,podMonitor.enabled=true,podMonitor.skipAPICheck=true")
		if err == nil || !strings.Contains(stderr, "both enabled") {
			t.Errorf("err %v, stderr %s", err, stderr)
		}
	})
}

// TestPodsRollOnConfigChangeUnderHelmTemplate: the checksum annotations
// follow the configuration in `helm template` output (no cluster to look
// anything up in), as Argo CD and Flux render it.
func TestPodsRollOnConfigChangeUnderHelmTemplate(t *testing.T) {
	const ccmKey, approverKey = "checksum/cloud-config", "checksum/approver-config"
	tests := []struct {
		name         string
		before       string
		after        string
		ccmRolls     bool
		approverRoll bool
	}{
		{"the same values give the same checksums", "cloudConfig.contents=[Global]", "cloudConfig.contents=[Global]", false, false},
		{"changed cloud.conf text rolls the pods", "cloudConfig.contents=[Global]", "cloudConfig.contents=[Global] (two)", true, false},
		{"a changed extra file rolls the pods", "cloudConfig.contents=x,cloudConfig.extraFiles.ca\\.crt=one", "cloudConfig.contents=x,cloudConfig.extraFiles.ca\\.crt=two", true, false},
		{"another existing Secret rolls the pods", "cloudConfig.existingSecret=conf-v1", "cloudConfig.existingSecret=conf-v2", true, false},
		{"another approver cloud config Secret rolls the approver's checksum only", "approver.cloudConfig.existingSecret=ro-v1", "approver.cloudConfig.existingSecret=ro-v2", false, true},
		{"enabling the signer rolls the approver's checksum only", "approver.signer.enabled=false", "approver.signer.enabled=true", false, true},
		{"a value outside the configuration rolls nothing through the checksums", "replicas=2", "replicas=3", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := render(t, "", "--set", tt.before).pod.Annotations
			after := render(t, "", "--set", tt.after).pod.Annotations
			for _, a := range []map[string]string{before, after} {
				if a[ccmKey] == "" || a[approverKey] == "" {
					t.Fatalf("pod annotations %v lack %s or %s", a, ccmKey, approverKey)
				}
			}
			if rolled := before[ccmKey] != after[ccmKey]; rolled != tt.ccmRolls {
				t.Errorf("%s changed: %v, want %v", ccmKey, rolled, tt.ccmRolls)
			}
			if rolled := before[approverKey] != after[approverKey]; rolled != tt.approverRoll {
				t.Errorf("%s changed: %v, want %v", approverKey, rolled, tt.approverRoll)
			}
		})
	}
}

// TestParentChartGlobalValuesAreAccepted installs nothing: it renders a
// parent chart that carries this one in charts/ and has `global:` values,
// which Helm hands to the subchart and its strict schema must accept.
func TestParentChartGlobalValuesAreAccepted(t *testing.T) {
	parent := t.TempDir()
	if err := os.CopyFS(filepath.Join(parent, "charts", "stackward"), os.DirFS(chartDir())); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: platform\nversion: 1.0.0\n",
		"values.yaml": `global:
  imageRegistry: registry.example.com
  imagePullSecrets: [registry-credentials]
stackward:
  cloudConfig:
    existingSecret: openstack-cloud-config
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(parent, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, bin := range []string{"helm3", "helm4"} {
		t.Run(bin+" renders the subchart with the parent's global values", func(t *testing.T) {
			out, stderr, err := helm(t, bin, "template", "platform", parent, "--namespace", "kube-system")
			if err != nil {
				t.Fatalf("%s template of a parent chart: %v\n%s", bin, err, stderr)
			}
			var found bool
			for _, doc := range documents(out) {
				var d struct {
					Kind     string
					Metadata struct{ Name string }
					Spec     struct {
						Template corev1.PodTemplateSpec
					}
				}
				if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
					t.Fatal(err)
				}
				if d.Kind != "Deployment" && d.Kind != "DaemonSet" {
					continue
				}
				found = true
				if d.Metadata.Name != "platform-stackward" {
					t.Errorf("%s %s, want platform-stackward", d.Kind, d.Metadata.Name)
				}
				if v := d.Spec.Template.Spec.Volumes; len(v) == 0 || v[0].Secret == nil || v[0].Secret.SecretName != "openstack-cloud-config" {
					t.Errorf("the parent's stackward values did not arrive: volumes %+v", v)
				}
			}
			if !found {
				t.Errorf("no workload (Deployment or DaemonSet) rendered:\n%s", out)
			}
		})
	}
}
