package approver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/pki"
)

// Publishing the kubelet-serving CA bundle to the cluster's clients of
// kubelets (metrics-server's --kubelet-certificate-authority, Prometheus's
// ca_file), so none of them needs --kubelet-insecure-tls: a ConfigMap in
// the approver's namespace always, and a ClusterTrustBundle where the
// apiserver serves that API (certificates.k8s.io/v1 from Kubernetes 1.37,
// v1beta1 behind the ClusterTrustBundle feature gate before).

const (
	// CABundleKey is the ConfigMap key holding the PEM bundle, the name
	// kube-root-ca.crt uses.
	CABundleKey = "ca.crt"
	// DefaultCABundleConfigMap is the chart's ConfigMap name.
	DefaultCABundleConfigMap = "stackward-kubelet-serving-ca"
	// KubeletServingSigner is the signer whose trust anchors are published.
	KubeletServingSigner = "kubernetes.io/kubelet-serving"
	// CABundleClusterTrustBundle is the ClusterTrustBundle's name: a bundle
	// with spec.signerName must be named after the signer, its slashes
	// turned into colons, then a colon and a suffix of its own. Pods select
	// it by this name, or all of the signer's bundles by signerName.
	CABundleClusterTrustBundle = "kubernetes.io:kubelet-serving:stackward"

	// clusterTrustBundlePrefix is what every name of the signer's bundles
	// starts with.
	clusterTrustBundlePrefix = "kubernetes.io:kubelet-serving:"

	DefaultCABundleInterval = 30 * time.Second
	DefaultCABundleResync   = 10 * time.Minute

	// caBundleManagedBy marks what the approver publishes.
	caBundleManagedBy = "stackward-approver"
)

// CABundle says where the CA files are and where to publish them. A zero
// ConfigMapName publishes nothing.
type CABundle struct {
	// Dir holds kubelet-serving-ca.crt and, during a rotation,
	// kubelet-serving-ca-bundle.crt (pki.TrustBundle); the key is not read.
	Dir                    string
	ConfigMapNamespace     string
	ConfigMapName          string
	ClusterTrustBundleName string // empty: no ClusterTrustBundle
	// Interval is how often the files are read, Resync how often the
	// objects are rewritten when the files did not change (someone may have
	// edited or deleted them).
	Interval, Resync time.Duration
}

// Enabled reports whether anything is published.
func (b CABundle) Enabled() bool { return b.ConfigMapName != "" }

// ClusterTrustBundle API versions, preferred first.
var clusterTrustBundleVersions = []schema.GroupVersionResource{
	{Group: "certificates.k8s.io", Version: "v1", Resource: "clustertrustbundles"},
	{Group: "certificates.k8s.io", Version: "v1beta1", Resource: "clustertrustbundles"},
}

// caBundlePublisher keeps the ConfigMap and the ClusterTrustBundle equal to
// the CA files. It runs on the leader only, so replicas whose mounted
// Secrets update a few seconds apart do not take turns writing.
type caBundlePublisher struct {
	client  kubernetes.Interface
	dynamic dynamic.Interface
	opts    CABundle
	now     func() time.Time

	mu        sync.Mutex
	published []byte
	at        time.Time
	lastErr   string
}

func newCABundlePublisher(client kubernetes.Interface, dyn dynamic.Interface, opts CABundle) *caBundlePublisher {
	if opts.Interval <= 0 {
		opts.Interval = DefaultCABundleInterval
	}
	if opts.Resync <= 0 {
		opts.Resync = DefaultCABundleResync
	}
	return &caBundlePublisher{client: client, dynamic: dyn, opts: opts, now: time.Now}
}

// Run publishes at once and then whenever the files change, until ctx is done.
func (p *caBundlePublisher) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("configMap", p.opts.ConfigMapNamespace+"/"+p.opts.ConfigMapName, "dir", p.opts.Dir)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		err := p.sync(ctx)
		p.mu.Lock()
		defer p.mu.Unlock()
		switch {
		case err == nil:
			p.lastErr = ""
		case err.Error() != p.lastErr: // once per distinct failure, not every interval
			p.lastErr = err.Error()
			logger.Error(err, "Could not publish the kubelet-serving CA bundle; retrying")
		}
	}, p.opts.Interval)
}

// sync reads the bundle and publishes it when it changed or the last
// publication is older than Resync.
func (p *caBundlePublisher) sync(ctx context.Context) error {
	bundle, certs, err := pki.TrustBundle(p.opts.Dir)
	if err != nil {
		return err
	}
	p.mu.Lock()
	fresh := bytes.Equal(bundle, p.published) && p.now().Sub(p.at) < p.opts.Resync
	p.mu.Unlock()
	if fresh {
		return nil
	}
	errCM := p.publishConfigMap(ctx, bundle)
	version, errCTB := p.publishClusterTrustBundle(ctx, bundle)
	if err := errors.Join(errCM, errCTB); err != nil {
		return err
	}
	p.mu.Lock()
	changed := !bytes.Equal(bundle, p.published)
	p.published, p.at = bundle, p.now()
	p.mu.Unlock()
	if changed {
		serials := make([]string, len(certs))
		for i, c := range certs {
			serials[i] = c.SerialNumber.String()
		}
		klog.FromContext(ctx).Info("Published the kubelet-serving CA bundle", "configMap", p.opts.ConfigMapNamespace+"/"+p.opts.ConfigMapName,
			"clusterTrustBundle", version, "serials", serials)
	}
	return nil
}

func (p *caBundlePublisher) publishConfigMap(ctx context.Context, bundle []byte) error {
	cms := p.client.CoreV1().ConfigMaps(p.opts.ConfigMapNamespace)
	cm, err := cms.Get(ctx, p.opts.ConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: p.opts.ConfigMapName, Namespace: p.opts.ConfigMapNamespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": caBundleManagedBy}},
			Data: map[string]string{CABundleKey: string(bundle)},
		}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ConfigMap %s/%s: %w", p.opts.ConfigMapNamespace, p.opts.ConfigMapName, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get ConfigMap %s/%s: %w", p.opts.ConfigMapNamespace, p.opts.ConfigMapName, err)
	}
	if cm.Data[CABundleKey] == string(bundle) {
		return nil
	}
	cm = cm.DeepCopy()
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[CABundleKey] = string(bundle)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update ConfigMap %s/%s: %w", p.opts.ConfigMapNamespace, p.opts.ConfigMapName, err)
	}
	return nil
}

// clusterTrustBundleAPI is the preferred served version of the
// ClusterTrustBundle API, or false when none is. A group version the
// apiserver does not serve is a 404; any other failure is an error, never
// "not served".
func (p *caBundlePublisher) clusterTrustBundleAPI() (schema.GroupVersionResource, bool, error) {
	for _, gvr := range clusterTrustBundleVersions {
		list, err := p.client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return gvr, false, fmt.Errorf("discover %s: %w", gvr.GroupVersion(), err)
		}
		for _, r := range list.APIResources {
			if r.Name == gvr.Resource {
				return gvr, true, nil
			}
		}
	}
	return schema.GroupVersionResource{}, false, nil
}

// publishClusterTrustBundle returns the API version it wrote ("" when the
// API is not served or no bundle is wanted).
func (p *caBundlePublisher) publishClusterTrustBundle(ctx context.Context, bundle []byte) (string, error) {
	name := p.opts.ClusterTrustBundleName
	if name == "" {
		return "", nil
	}
	gvr, served, err := p.clusterTrustBundleAPI()
	if err != nil || !served {
		return "", err
	}
	ctbs := p.dynamic.Resource(gvr)
	spec := map[string]any{"signerName": KubeletServingSigner, "trustBundle": string(bundle)}
	obj, err := ctbs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(),
			"kind":       "ClusterTrustBundle",
			"metadata": map[string]any{
				"name":   name,
				"labels": map[string]any{"app.kubernetes.io/managed-by": caBundleManagedBy},
			},
			"spec": spec,
		}}
		if _, err := ctbs.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return "", fmt.Errorf("create ClusterTrustBundle %s (%s): %w", name, gvr.Version, err)
		}
		return gvr.Version, nil
	}
	if err != nil {
		return "", fmt.Errorf("get ClusterTrustBundle %s (%s): %w", name, gvr.Version, err)
	}
	have, _, _ := unstructured.NestedString(obj.Object, "spec", "trustBundle")
	signer, _, _ := unstructured.NestedString(obj.Object, "spec", "signerName")
	if have == string(bundle) && signer == KubeletServingSigner {
		return gvr.Version, nil
	}
	obj = obj.DeepCopy()
	if err := unstructured.SetNestedField(obj.Object, string(bundle), "spec", "trustBundle"); err != nil {
		return "", fmt.Errorf("update ClusterTrustBundle %s: %w", name, err)
	}
	if _, err := ctbs.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return "", fmt.Errorf("update ClusterTrustBundle %s (%s): %w", name, gvr.Version, err)
	}
	return gvr.Version, nil
}
