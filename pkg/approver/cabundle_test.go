package approver

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/yaml"

	"github.com/stackward/stackward/pkg/pki"
)

// publisherFixture is a publisher over a fresh CA directory, a fake
// apiserver serving the given ClusterTrustBundle versions, and a clock.
type publisherFixture struct {
	dir     string
	client  *fake.Clientset
	dynamic *dynamicfake.FakeDynamicClient
	p       *caBundlePublisher
	now     time.Time
}

func newPublisherFixture(t *testing.T, ctbVersions ...string) *publisherFixture {
	t.Helper()
	dir := t.TempDir()
	if _, err := pki.Init(pki.InitOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	f := &publisherFixture{dir: dir, client: fake.NewClientset(), dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), now: time.Unix(1_800_000_000, 0)}
	disco := f.client.Discovery().(*fakediscovery.FakeDiscovery)
	disco.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Namespaced: true}}}}
	for _, v := range ctbVersions {
		disco.Resources = append(disco.Resources, &metav1.APIResourceList{GroupVersion: "certificates.k8s.io/" + v,
			APIResources: []metav1.APIResource{{Name: "certificatesigningrequests"}, {Name: "clustertrustbundles"}}})
	}
	if len(ctbVersions) == 0 { // the group is served, without the bundles (feature gate off)
		disco.Resources = append(disco.Resources, &metav1.APIResourceList{GroupVersion: "certificates.k8s.io/v1",
			APIResources: []metav1.APIResource{{Name: "certificatesigningrequests"}}})
	}
	f.p = newCABundlePublisher(f.client, f.dynamic, CABundle{Dir: dir, ConfigMapNamespace: "kube-system", ConfigMapName: DefaultCABundleConfigMap,
		ClusterTrustBundleName: CABundleClusterTrustBundle})
	f.p.now = func() time.Time { return f.now }
	return f
}

func (f *publisherFixture) sync(t *testing.T) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	if err := f.p.sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// configMapSerials are the serial numbers of the certificates in the
// published ConfigMap.
func (f *publisherFixture) configMapSerials(t *testing.T) []string {
	t.Helper()
	cm, err := f.client.CoreV1().ConfigMaps("kube-system").Get(context.Background(), DefaultCABundleConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return serials(t, cm.Data[CABundleKey])
}

// ctb returns the published ClusterTrustBundle of version v, or nil.
func (f *publisherFixture) ctb(t *testing.T, v string) *unstructured.Unstructured {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "certificates.k8s.io", Version: v, Resource: "clustertrustbundles"}
	obj, err := f.dynamic.Resource(gvr).Get(context.Background(), CABundleClusterTrustBundle, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return obj
}

func ctbSerials(t *testing.T, obj *unstructured.Unstructured) []string {
	t.Helper()
	b, _, _ := unstructured.NestedString(obj.Object, "spec", "trustBundle")
	return serials(t, b)
}

func serials(t *testing.T, bundle string) []string {
	t.Helper()
	var out []string
	for rest := []byte(bundle); ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if len(b.Headers) > 0 {
			t.Errorf("PEM block with headers %v (the apiserver rejects them in a ClusterTrustBundle)", b.Headers)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c.SerialNumber.String())
	}
	return out
}

func caSerial(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pki.ParseCertificate(data)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.String()
}

func writes(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		if v := a.GetVerb(); v == "create" || v == "update" || v == "patch" || v == "delete" {
			out = append(out, v+" "+a.GetResource().Resource)
		}
	}
	return out
}

func TestCABundleIsPublishedWhereTheAPIIsServed(t *testing.T) {
	for _, tc := range []struct {
		name        string
		served      []string
		wantVersion string // "" : no ClusterTrustBundle
	}{
		{name: "1.36 with the ClusterTrustBundle gate gets a v1beta1 bundle and the ConfigMap", served: []string{"v1beta1"}, wantVersion: "v1beta1"},
		{name: "1.37 gets a v1 bundle (preferred over v1beta1) and the ConfigMap", served: []string{"v1", "v1beta1"}, wantVersion: "v1"},
		{name: "an apiserver without the ClusterTrustBundle API gets the ConfigMap only", wantVersion: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPublisherFixture(t, tc.served...)
			f.sync(t)
			want := []string{caSerial(t, filepath.Join(f.dir, pki.CertFile))}
			if got := f.configMapSerials(t); !slices.Equal(got, want) {
				t.Errorf("ConfigMap holds CAs %v, want %v", got, want)
			}
			for _, v := range []string{"v1", "v1beta1"} {
				obj := f.ctb(t, v)
				if v != tc.wantVersion {
					if obj != nil {
						t.Errorf("a %s ClusterTrustBundle was written", v)
					}
					continue
				}
				if obj == nil {
					t.Fatalf("no %s ClusterTrustBundle %s", v, CABundleClusterTrustBundle)
				}
				if s, _, _ := unstructured.NestedString(obj.Object, "spec", "signerName"); s != KubeletServingSigner {
					t.Errorf("signerName %q, want %q", s, KubeletServingSigner)
				}
				if got := ctbSerials(t, obj); !slices.Equal(got, want) {
					t.Errorf("ClusterTrustBundle holds CAs %v, want %v", got, want)
				}
			}
			if tc.wantVersion == "" {
				if got := writes(f.dynamic.Actions()); len(got) != 0 {
					t.Errorf("ClusterTrustBundle writes %v where the API is not served", got)
				}
			}
		})
	}
}

// Through a whole rotation the published bundle holds every CA a kubelet
// may serve a certificate of: the current one, both while the rotation is
// under way (whichever file the operator updated first), the new one
// alone once finished.
func TestCABundleFollowsARotation(t *testing.T) {
	// The control-plane host's PKI directory, and the approver's mount of
	// the Secret that `stackward pki export | kubectl apply -f -` writes.
	f := newPublisherFixture(t, "v1beta1")
	pkiDir := t.TempDir()
	if _, err := pki.Init(pki.InitOptions{Dir: pkiDir}); err != nil {
		t.Fatal(err)
	}
	apply := func(export func(string) ([]byte, error)) {
		t.Helper()
		manifest, err := export(pkiDir)
		if err != nil {
			t.Fatal(err)
		}
		var s corev1.Secret
		if err := yaml.UnmarshalStrict(manifest, &s); err != nil {
			t.Fatal(err)
		}
		// The kubelet's atomic writer: the mount holds exactly the Secret's keys.
		entries, _ := os.ReadDir(f.dir)
		for _, e := range entries {
			_ = os.Remove(filepath.Join(f.dir, e.Name()))
		}
		for k, v := range s.Data {
			if err := os.WriteFile(filepath.Join(f.dir, k), v, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply(pki.Export)
	f.sync(t)
	current := caSerial(t, filepath.Join(pkiDir, pki.CertFile))
	check := func(step string, want []string) {
		t.Helper()
		if got := f.configMapSerials(t); !slices.Equal(got, want) {
			t.Errorf("%s: ConfigMap holds CAs %v, want %v", step, got, want)
		}
		if got := ctbSerials(t, f.ctb(t, "v1beta1")); !slices.Equal(got, want) {
			t.Errorf("%s: ClusterTrustBundle holds CAs %v, want %v", step, got, want)
		}
	}
	check("before the rotation", []string{current})

	res, err := pki.Rotate(pki.RotateOptions{Dir: pkiDir})
	if err != nil {
		t.Fatal(err)
	}
	next := res.Next.Cert.SerialNumber.String()
	f.sync(t)
	check("pki rotate, Secret not yet updated", []string{current})

	apply(pki.Export) // step 2: trust both
	f.sync(t)
	check("the Secret carries the bundle of both", []string{current, next})

	apply(pki.ExportNext) // step 3: the built-in signer signs with the next CA
	f.sync(t)
	check("the Secret holds the next pair and the bundle", []string{current, next})

	if _, err := pki.Finish(pkiDir); err != nil {
		t.Fatal(err)
	}
	apply(pki.Export)
	f.sync(t)
	check("pki rotate --finish, exported again", []string{next})
}

func TestCABundlePublishingIsIdempotent(t *testing.T) {
	f := newPublisherFixture(t, "v1beta1")
	f.sync(t)
	if got, want := append(writes(f.client.Actions()), writes(f.dynamic.Actions())...), []string{"create configmaps", "create clustertrustbundles"}; !slices.Equal(got, want) {
		t.Fatalf("first publication wrote %v, want %v", got, want)
	}
	f.client.ClearActions()
	f.dynamic.ClearActions()

	f.now = f.now.Add(time.Minute)
	f.sync(t)
	if n := len(f.client.Actions()) + len(f.dynamic.Actions()); n != 0 {
		t.Errorf("unchanged files within the resync period made %d requests", n)
	}

	f.now = f.now.Add(DefaultCABundleResync)
	f.sync(t)
	if got := append(writes(f.client.Actions()), writes(f.dynamic.Actions())...); len(got) != 0 {
		t.Errorf("a resync of objects already current wrote %v", got)
	}

	// Someone empties the ConfigMap: the next resync puts the bundle back.
	cm, err := f.client.CoreV1().ConfigMaps("kube-system").Get(context.Background(), DefaultCABundleConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = nil
	if _, err := f.client.CoreV1().ConfigMaps("kube-system").Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(DefaultCABundleResync)
	f.sync(t)
	if got := f.configMapSerials(t); len(got) != 1 {
		t.Errorf("the emptied ConfigMap holds %v after a resync", got)
	}
}

func TestCABundleFailuresAreErrorsNotAbsence(t *testing.T) {
	t.Run("a discovery failure other than 404 is an error, and the ConfigMap is still written", func(t *testing.T) {
		f := newPublisherFixture(t, "v1beta1")
		f.client.Discovery().(*fakediscovery.FakeDiscovery).PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("connection refused")
		})
		_, ctx := ktesting.NewTestContext(t)
		if err := f.p.sync(ctx); err == nil {
			t.Fatal("no error when discovery failed")
		}
		if got := f.configMapSerials(t); len(got) != 1 {
			t.Errorf("ConfigMap holds %v", got)
		}
		if f.ctb(t, "v1beta1") != nil {
			t.Error("a ClusterTrustBundle was written without discovery")
		}
	})
	t.Run("a directory without the CA certificate publishes nothing", func(t *testing.T) {
		f := newPublisherFixture(t, "v1beta1")
		if err := os.Remove(filepath.Join(f.dir, pki.CertFile)); err != nil {
			t.Fatal(err)
		}
		_, ctx := ktesting.NewTestContext(t)
		if err := f.p.sync(ctx); err == nil {
			t.Fatal("no error without a CA certificate")
		}
		if got := append(writes(f.client.Actions()), writes(f.dynamic.Actions())...); len(got) != 0 {
			t.Errorf("wrote %v", got)
		}
	})
}

func TestCABundleConfigIsValidated(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bundle  CABundle
		signDir string
		wantErr bool
	}{
		{name: "a ConfigMap with the signer's directory is valid", bundle: CABundle{ConfigMapNamespace: "kube-system", ConfigMapName: "x", ClusterTrustBundleName: CABundleClusterTrustBundle}, signDir: "/ca"},
		{name: "a ConfigMap without any CA directory is refused", bundle: CABundle{ConfigMapNamespace: "kube-system", ConfigMapName: "x"}, wantErr: true},
		{name: "a ClusterTrustBundle name not after the signer is refused", bundle: CABundle{Dir: "/ca", ConfigMapNamespace: "kube-system", ConfigMapName: "x", ClusterTrustBundleName: "stackward-ca"}, wantErr: true},
		{name: "the bare signer prefix is refused", bundle: CABundle{Dir: "/ca", ConfigMapNamespace: "kube-system", ConfigMapName: "x", ClusterTrustBundleName: clusterTrustBundlePrefix}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Cloud: testCloud(), SignWithCADir: tc.signDir, CABundle: tc.bundle}
			if err := cfg.Validate(); (err != nil) != tc.wantErr {
				t.Errorf("Validate: %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

// The leader publishes beside deciding: runWithClient with a CA directory
// and no leader election writes the ConfigMap.
func TestRunPublishesTheCABundle(t *testing.T) {
	f := newPublisherFixture(t)
	cfg := Config{
		Options:  Options{Policy: testPolicy, RateLimiter: fastRetries()},
		Cloud:    testCloud(),
		CABundle: CABundle{Dir: f.dir, ConfigMapNamespace: "kube-system", ConfigMapName: DefaultCABundleConfigMap, ClusterTrustBundleName: CABundleClusterTrustBundle},
		Dynamic:  f.dynamic,
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- runWithClient(ctx, cfg, f.client, nil) }()
	err := waitFor(ctx, func() bool {
		_, err := f.client.CoreV1().ConfigMaps("kube-system").Get(ctx, DefaultCABundleConfigMap, metav1.GetOptions{})
		return err == nil
	})
	cancel()
	if err != nil {
		t.Errorf("no ConfigMap published: %v", err)
	}
	<-done // stopped early, before the caches synced: its error says so

}

func waitFor(ctx context.Context, cond func() bool) error {
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return cond(), nil })
}
