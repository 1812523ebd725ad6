//go:build e2e

package chart

import (
	"bytes"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/stackward/stackward/pkg/config"
)

var update = flag.Bool("update", false, "rewrite the golden `helm template` outputs in testdata/golden")

// TestGoldenTemplates renders the chart with Helm 3 for every ci values
// file and compares with testdata/golden/<name>.yaml; `go test -tags e2e
// ./e2e/chart -run TestGoldenTemplates -update` rewrites them. Helm 4 must
// render the same manifests (it only separates documents differently).
func TestGoldenTemplates(t *testing.T) {
	files := ciValuesFiles(t)
	for _, name := range sortedKeys(files) {
		t.Run(name, func(t *testing.T) {
			got := helmTemplate(t, "helm3", files[name])
			golden := filepath.Join("testdata", "golden", name+".yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("helm template -f %s differs from %s (run with -update if the change is intended):\n%s", files[name], golden, firstDifference(string(want), got))
			}
			if h4 := helmTemplate(t, "helm4", files[name]); !slices.Equal(documents(h4), documents(got)) {
				t.Errorf("helm4 renders other manifests than helm3:\n%s", firstDifference(got, h4))
			}
		})
	}
}

// documents splits a multi-document YAML stream into trimmed documents.
func documents(s string) []string {
	var docs []string
	for _, d := range strings.Split(s, "\n---\n") {
		if d = strings.TrimSpace(strings.TrimPrefix(d, "---")); d != "" {
			docs = append(docs, d)
		}
	}
	return docs
}

func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, wl, gl)
		}
	}
	return "(no line differs)"
}

// TestLintStrict runs `helm lint --strict` with Helm 3 and Helm 4 over the
// chart's defaults and every ci values file.
func TestLintStrict(t *testing.T) {
	files := ciValuesFiles(t)
	files["chart defaults"] = ""
	for _, bin := range []string{"helm3", "helm4"} {
		for _, name := range sortedKeys(files) {
			t.Run(bin+"/"+name, func(t *testing.T) {
				args := []string{"lint", "--strict", chartDir(), "--namespace", "kube-system"}
				if files[name] != "" {
					args = append(args, "-f", files[name])
				}
				out, stderr, err := helm(t, bin, args...)
				if err != nil || !strings.Contains(out, "0 chart(s) failed") {
					t.Fatalf("%s %v: %v\n%s%s", bin, args, err, out, stderr)
				}
				// --strict fails on warnings; errors and warnings are the
				// only levels it reports besides INFO.
				for _, bad := range []string{"[ERROR]", "[WARNING]"} {
					if strings.Contains(out, bad) {
						t.Errorf("%s lint reports %s:\n%s", bin, bad, out)
					}
				}
			})
		}
	}
}

// TestSchemaRejectsBadValues: typos and wrong types fail `helm template`
// (so also install and upgrade) with an error naming the value.
func TestSchemaRejectsBadValues(t *testing.T) {
	tests := []struct {
		name string
		set  string
		want []string
	}{
		{"replicas as a word is rejected", "replicas=two", []string{"/replicas", "got string, want integer"}},
		{"an unknown top-level key is rejected", "replica=2", []string{"additional properties 'replica' not allowed"}},
		{"an unknown workload kind is rejected", "kind=StatefulSet", []string{"/kind", "Deployment", "DaemonSet"}},
		{"a nested typo is rejected", "ccm.image.pullpolicy=Always", []string{"/ccm/image", "additional properties 'pullpolicy' not allowed"}},
		{"an unknown cloud.conf key is rejected", "cloudConfig.config.Global.auth-urll=https://keystone", []string{"/cloudConfig/config/Global", "'auth-urll' not allowed"}},
		{"a cloud.conf key of the wrong type is rejected", "cloudConfig.config.LoadBalancer.max-shared-lb=many", []string{"/cloudConfig/config/LoadBalancer/max-shared-lb", "want integer"}},
		{"a node DNS suffix that is no DNS name is rejected", "nodeDNSSuffixes={Nodes.Example.COM}", []string{"/nodeDNSSuffixes/0"}},
		{"an unknown container store is rejected", "cloudConfig.config.LoadBalancer.container-store=vault", []string{"/cloudConfig/config/LoadBalancer/container-store"}},
		{"an out-of-range port is rejected", "ccm.securePort=70000", []string{"/ccm/securePort"}},
		{"an existing Secret and inline contents conflict", "cloudConfig.existingSecret=mine,cloudConfig.contents=[Global]", []string{"existingSecret cannot be combined with contents"}},
		{"inline contents and structured config conflict", "cloudConfig.contents=[Global],cloudConfig.config.Route.router-id=r1", []string{"set contents or config, not both"}},
		{"an unknown LoadBalancerClass key is rejected", "cloudConfig.config.LoadBalancerClass.dmz.lb-method=ROUND_ROBIN", []string{"/cloudConfig/config/LoadBalancerClass/dmz", "'lb-method' not allowed"}},
		{"an image digest that is no digest is rejected", "ccm.image.digest=v1.2.3", []string{"/ccm/image/digest"}},
		{"an environment variable without a name is rejected", "extraEnv[0].value=x", []string{"/extraEnv/0", "name"}},
		{"a host alias without hostnames is rejected", "hostAliases[0].ip=192.0.2.1", []string{"/hostAliases/0", "hostnames"}},
		{"a relabeling with an unknown action is rejected", "podMonitor.relabelings[0].action=delete", []string{"/podMonitor/relabelings/0/action"}},
		{"a volume mount without a path is rejected", "extraVolumeMounts[0].name=x", []string{"/extraVolumeMounts/0", "mountPath"}},
		{"a fullnameOverride that is no DNS label is rejected", "fullnameOverride=Stack_Ward", []string{"/fullnameOverride"}},
	}
	for _, bin := range []string{"helm3", "helm4"} {
		for _, tt := range tests {
			t.Run(bin+"/"+tt.name, func(t *testing.T) {
				out, stderr, err := helm(t, bin, "template", "x", chartDir(), "--set", tt.set)
				if err == nil {
					t.Fatalf("--set %s was accepted:\n%s", tt.set, out)
				}
				for _, w := range tt.want {
					if !strings.Contains(stderr, w) {
						t.Errorf("--set %s: error does not say %q:\n%s", tt.set, w, stderr)
					}
				}
			})
		}
	}
}

// rendered is one ci values file's output, decoded.
type rendered struct {
	kinds    map[string]int
	pod      corev1.PodTemplateSpec   // the CCM's
	pods     []corev1.PodTemplateSpec // every workload's: the CCM's, and the approver's with approver.separatePod
	workload string
	secrets  map[string]corev1.Secret
	tokens   []corev1.Secret
	objects  []object
}

// object is any rendered document: what every object has, and its text.
type object struct {
	Kind     string
	Metadata struct {
		Name        string
		Labels      map[string]string
		Annotations map[string]string
	}
	doc string
}

func render(t *testing.T, valuesFile string, extra ...string) rendered {
	t.Helper()
	r := rendered{kinds: map[string]int{}, secrets: map[string]corev1.Secret{}}
	for _, doc := range documents(helmTemplate(t, "helm3", valuesFile, extra...)) {
		var meta object
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		meta.doc = doc
		r.objects = append(r.objects, meta)
		r.kinds[meta.Kind]++
		switch meta.Kind {
		case "Deployment":
			var d appsv1.Deployment
			mustUnmarshalStrict(t, doc, &d)
			r.addPod(d.Spec.Template, meta.Kind)
		case "DaemonSet":
			var d appsv1.DaemonSet
			mustUnmarshalStrict(t, doc, &d)
			r.addPod(d.Spec.Template, meta.Kind)
		case "Secret":
			var s corev1.Secret
			mustUnmarshalStrict(t, doc, &s)
			if s.Type == corev1.SecretTypeServiceAccountToken {
				r.tokens = append(r.tokens, s) // credentials, not cloud config
				break
			}
			r.secrets[s.Name] = s
		}
	}
	return r
}

func (r *rendered) addPod(pod corev1.PodTemplateSpec, kind string) {
	r.pods = append(r.pods, pod)
	if pod.Labels["app.kubernetes.io/component"] == "cloud-controller-manager" {
		r.pod, r.workload = pod, kind
	}
}

// mustUnmarshalStrict decodes into the API type and fails on fields the
// type does not have (a misspelt field in a template).
func mustUnmarshalStrict(t *testing.T, doc string, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
		t.Fatalf("%v in\n%s", err, doc)
	}
}

// TestRenderedPodIsHardened checks, for every ci values file, what the
// chart promises of its pod whatever the values.
func TestRenderedPodIsHardened(t *testing.T) {
	files := ciValuesFiles(t)
	for _, name := range sortedKeys(files) {
		t.Run(name, func(t *testing.T) {
			r := render(t, files[name])
			values, err := os.ReadFile(files[name])
			if err != nil {
				t.Fatal(err)
			}
			separate := strings.Contains(string(values), "separatePod: true")
			want := 1
			if separate {
				want = 2 // the approver's own pod
			}
			if r.workload == "" || r.kinds["Deployment"]+r.kinds["DaemonSet"] != want {
				t.Fatalf("want %d Deployment(s) or DaemonSet(s), one the CCM's, got %v", want, r.kinds)
			}
			for _, pod := range r.pods {
				spec := pod.Spec
				ccmPod := pod.Labels["app.kubernetes.io/component"] == "cloud-controller-manager"
				if !spec.HostNetwork || spec.PriorityClassName != "system-cluster-critical" {
					t.Errorf("hostNetwork %v, priorityClassName %q", spec.HostNetwork, spec.PriorityClassName)
				}
				for _, key := range []string{"node.cloudprovider.kubernetes.io/uninitialized", "node-role.kubernetes.io/control-plane", "node.kubernetes.io/not-ready"} {
					if !slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool { return tol.Key == key }) {
						t.Errorf("no toleration for %s", key)
					}
				}
				psc := spec.SecurityContext
				if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
					psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("pod securityContext is not hardened: %+v", psc)
				}
				if ccmPod && (len(spec.Containers) == 0 || spec.Containers[0].Name != "ccm") {
					t.Fatalf("first container is not ccm: %+v", spec.Containers)
				}
				if !ccmPod && (len(spec.Containers) != 1 || spec.Containers[0].Name != "approver") {
					t.Fatalf("the approver's own pod has containers %+v, want the approver alone", spec.Containers)
				}
				for _, c := range spec.Containers {
					sc := c.SecurityContext
					if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
						sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
						sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
						sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
						t.Errorf("container %s securityContext is not hardened: %+v", c.Name, sc)
					}
					if c.LivenessProbe == nil || c.ReadinessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet == nil {
						t.Errorf("container %s lacks HTTP liveness/readiness probes", c.Name)
					}
					if c.Resources.Requests.Memory().IsZero() {
						t.Errorf("container %s has no memory request", c.Name)
					}
					// Exactly one cloud.conf, read-only: the approver's own when it
					// has one, never the CCM's read-write credential beside it.
					var clouds []string
					for _, m := range c.VolumeMounts {
						if m.Name == "cloud-config" || m.Name == "approver-cloud-config" {
							clouds = append(clouds, m.Name)
							if !m.ReadOnly {
								t.Errorf("container %s mounts %s read-write", c.Name, m.Name)
							}
						}
					}
					if len(clouds) != 1 {
						t.Errorf("container %s mounts cloud configs %v, want exactly one", c.Name, clouds)
					}
					if !slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--cloud-config=/etc/stackward") }) {
						t.Errorf("container %s has no --cloud-config: %v", c.Name, c.Args)
					}
				}
				// Two identities: the CCM the pod's ServiceAccount, the approver
				// its own. Both serve HTTPS behind delegated authorization on the
				// pod's IP, never on every interface of the (hostNetwork) host.
				if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
					t.Errorf("the pod automounts its ServiceAccount token into every container")
				}
				for _, c := range spec.Containers {
					var mounted string
					for _, m := range c.VolumeMounts {
						if m.MountPath == "/var/run/secrets/kubernetes.io/serviceaccount" {
							mounted = m.Name
						}
					}
					want := map[string]string{"ccm": "ccm-token", "approver": "approver-token"}[c.Name]
					if mounted != want {
						t.Errorf("container %s has credentials from volume %q, want %q", c.Name, mounted, want)
					}
					if c.Name == "approver" && ccmPod {
						var tokenSecret string
						for _, v := range spec.Volumes {
							if v.Name == "approver-token" && v.Secret != nil {
								tokenSecret = v.Secret.SecretName
							}
						}
						i := slices.IndexFunc(r.tokens, func(s corev1.Secret) bool { return s.Name == tokenSecret })
						if i < 0 || r.tokens[i].Annotations["kubernetes.io/service-account.name"] == spec.ServiceAccountName {
							t.Errorf("approver token Secret %q among %+v: want one, for a ServiceAccount other than the pod's %s", tokenSecret, r.tokens, spec.ServiceAccountName)
						}
					}
					if c.Name == "approver" && !ccmPod {
						// Its own pod: the pod's ServiceAccount is the approver's
						// (not the CCM's), its token projected and expiring, and no
						// legacy token Secret exists for it.
						if spec.ServiceAccountName == r.pod.Spec.ServiceAccountName {
							t.Errorf("the approver's pod runs as the CCM's ServiceAccount %s", spec.ServiceAccountName)
						}
						expiring := slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool {
							return v.Name == "approver-token" && v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(p corev1.VolumeProjection) bool {
								return p.ServiceAccountToken != nil && p.ServiceAccountToken.ExpirationSeconds != nil && *p.ServiceAccountToken.ExpirationSeconds <= 3607
							})
						})
						if !expiring {
							t.Errorf("the approver's own pod has no projected, expiring token: %+v", spec.Volumes)
						}
						if slices.ContainsFunc(r.tokens, func(s corev1.Secret) bool {
							return s.Annotations["kubernetes.io/service-account.name"] == spec.ServiceAccountName
						}) {
							t.Errorf("a legacy token Secret for %s is rendered beside its projected token", spec.ServiceAccountName)
						}
					}
					if c.Name == "approver" {
						for _, want := range []string{"--bind-address=$(POD_IP)", "--secure-port=10263", "--service-cidr=10.96.0.0/12"} {
							if !slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, want) }) {
								t.Errorf("approver args %v lack %s", c.Args, want)
							}
						}
					}
					if c.Name == "ccm" && !slices.Contains(c.Args, "--bind-address=$(POD_IP)") {
						t.Errorf("ccm args %v lack --bind-address=$(POD_IP)", c.Args)
					}
					if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
						return e.Name == "POD_IP" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP"
					}) {
						t.Errorf("container %s has no POD_IP from the downward API: %+v", c.Name, c.Env)
					}
					for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
						if p != nil && p.HTTPGet != nil && (p.HTTPGet.Scheme != corev1.URISchemeHTTPS || p.HTTPGet.Host != "") {
							t.Errorf("container %s probes %s://%s%s, want HTTPS on the pod's IP", c.Name, p.HTTPGet.Scheme, p.HTTPGet.Host, p.HTTPGet.Path)
						}
					}
				}
			}
			if separate && slices.ContainsFunc(r.pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == "approver" }) {
				t.Errorf("approver.separatePod and the CCM's pod still carries the approver")
			}
			// A chart-made Secret rolls the pod through the checksum.
			if len(r.secrets) > 0 && r.pod.Annotations["checksum/cloud-config"] == "" {
				t.Errorf("the chart creates %d Secret(s) but the pod has no checksum/cloud-config annotation", len(r.secrets))
			}
			if r.workload == "Deployment" && r.kinds["PodDisruptionBudget"] != 1 {
				t.Errorf("a Deployment comes with a PodDisruptionBudget, got %v", r.kinds)
			}
			if r.workload == "DaemonSet" && r.kinds["PodDisruptionBudget"] != 0 {
				t.Errorf("a DaemonSet comes without a PodDisruptionBudget, got %v", r.kinds)
			}
		})
	}
}

// TestDefaultImagesNameNoRegistry: the chart does not pick a registry for
// its users; the default repositories are plain names.
func TestDefaultImagesNameNoRegistry(t *testing.T) {
	r := render(t, ciValuesFiles(t)["default"])
	for _, c := range r.pod.Spec.Containers {
		repo, _, _ := strings.Cut(c.Image, ":")
		first, _, _ := strings.Cut(repo, "/")
		if strings.ContainsAny(first, ".:") || first == "localhost" {
			t.Errorf("container %s image %q names a registry host", c.Name, c.Image)
		}
	}
}

// TestStructuredCloudConfigParses: cloud.conf rendered from structured
// values is read back by stackward's own parser without a warning, with
// quoting and repeated keys intact.
func TestStructuredCloudConfigParses(t *testing.T) {
	r := render(t, ciValuesFiles(t)["servicemonitor"])
	s, ok := r.secrets["stackward-cloud-config"]
	if !ok {
		t.Fatalf("no Secret stackward-cloud-config; secrets: %v", r.secrets)
	}
	data := s.Data["cloud.conf"]
	if len(data) == 0 {
		// The rendered YAML carries base64 in data; UnmarshalStrict into
		// []byte decodes it, so an empty value means the key is missing.
		t.Fatalf("Secret has no cloud.conf: %v", s.Data)
	}
	cfg, warnings, err := config.Parse("cloud.conf", bytes.NewReader(data))
	if err != nil {
		t.Fatalf("rendered cloud.conf does not parse: %v\n%s", err, data)
	}
	if len(warnings) > 0 {
		t.Errorf("rendered cloud.conf has warnings: %v\n%s", warnings, data)
	}
	if cfg.Global.Password != `not-a-real "password"` {
		t.Errorf("password %q: quoting lost\n%s", cfg.Global.Password, data)
	}
	if cfg.Global.TenantName != "kubernetes" || cfg.Global.AuthURL != "https://keystone.example.com:5000/v3" {
		t.Errorf("Global %+v", cfg.Global)
	}
	if !slices.Equal(cfg.Networking.InternalNetworkNames, []string{"k8s-nodes", "k8s-storage"}) {
		t.Errorf("internal networks %v: a list must become repeated keys\n%s", cfg.Networking.InternalNetworkNames, data)
	}
	if cfg.LoadBalancer.MonitorMaxRetries != 2 {
		t.Errorf("monitor-max-retries %d", cfg.LoadBalancer.MonitorMaxRetries)
	}
	// LoadBalancerClass: class name → keys becomes [LoadBalancerClass "name"].
	if c := cfg.LoadBalancer.Classes["internetFacing"]; c == nil || c.FloatingNetworkID != "0a1b2c3d-0000-4000-8000-000000000001" || c.FloatingSubnet != "~^public-.*$" {
		t.Errorf("class internetFacing %+v\n%s", c, data)
	}
	if c := cfg.LoadBalancer.Classes["dmz"]; c == nil || c.SubnetID != "0a1b2c3d-0000-4000-8000-000000000002" || c.MemberSubnetID != "0a1b2c3d-0000-4000-8000-000000000003" {
		t.Errorf("class dmz %+v\n%s", c, data)
	}
	if ca := s.Data["ca.crt"]; !bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) {
		t.Errorf("extraFiles ca.crt missing: %q", base64.StdEncoding.EncodeToString(ca))
	}
}
