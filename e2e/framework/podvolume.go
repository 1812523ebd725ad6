package framework

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// volumeFiles are the files the kubelet would put in a pod's volume v (a
// pod of namespace ns), by path inside it: Secret and ConfigMap volumes,
// and projected volumes of Secrets, ConfigMaps and ClusterTrustBundles.
// Other volumes (emptyDir, the ServiceAccount token, which StartPod gives
// as a kubeconfig) are empty. The files are read once, at the pod's start.
func (cp *ControlPlane) volumeFiles(ctx context.Context, ns string, v corev1.Volume) (map[string][]byte, error) {
	files := map[string][]byte{}
	add := func(more map[string][]byte, err error) error {
		if err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
		for k, data := range more {
			files[k] = data
		}
		return nil
	}
	switch {
	case v.Secret != nil:
		return files, add(cp.secretFiles(ctx, ns, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional))
	case v.ConfigMap != nil:
		return files, add(cp.configMapFiles(ctx, ns, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional))
	case v.Projected != nil:
		for _, src := range v.Projected.Sources {
			var err error
			switch {
			case src.Secret != nil:
				err = add(cp.secretFiles(ctx, ns, src.Secret.Name, src.Secret.Items, src.Secret.Optional))
			case src.ConfigMap != nil:
				err = add(cp.configMapFiles(ctx, ns, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional))
			case src.ClusterTrustBundle != nil:
				err = add(cp.clusterTrustBundleFile(ctx, *src.ClusterTrustBundle))
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}

// writeVolume writes files under dir, each replaced whole (a reader sees
// the old content or the new, as with the kubelet's atomic writer).
func writeVolume(dir string, files map[string][]byte) error {
	for path, data := range files {
		dst := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
			return err
		}
		tmp := dst + ".tmp"
		if err := os.WriteFile(tmp, data, 0o440); err != nil {
			return err
		}
		if err := os.Rename(tmp, dst); err != nil {
			return err
		}
	}
	return nil
}

func (cp *ControlPlane) secretFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, optional *bool) (map[string][]byte, error) {
	var s *corev1.Secret
	err := untilFound(ctx, optional, func(ctx context.Context) (err error) {
		s, err = cp.Admin.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	switch {
	case apierrors.IsNotFound(err) && optional != nil && *optional:
		return nil, nil // the kubelet mounts an optional missing Secret empty
	case err != nil:
		return nil, fmt.Errorf("secret %s/%s: %w", ns, name, err)
	}
	return keyFiles(s.Data, items), nil
}

func (cp *ControlPlane) configMapFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, optional *bool) (map[string][]byte, error) {
	var c *corev1.ConfigMap
	err := untilFound(ctx, optional, func(ctx context.Context) (err error) {
		c, err = cp.Admin.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	switch {
	case apierrors.IsNotFound(err) && optional != nil && *optional:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("configmap %s/%s: %w", ns, name, err)
	}
	data := map[string][]byte{}
	for k, v := range c.Data {
		data[k] = []byte(v)
	}
	for k, v := range c.BinaryData {
		data[k] = v
	}
	return keyFiles(data, items), nil
}

// untilFound runs get until it finds its object: the kubelet waits for a
// volume's missing ConfigMap or Secret (the pod stays ContainerCreating),
// here up to a minute; an optional one is not waited for.
func untilFound(ctx context.Context, optional *bool, get func(context.Context) error) error {
	if optional != nil && *optional {
		return get(ctx)
	}
	var err error
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err = get(ctx)
		return !apierrors.IsNotFound(err), nil
	})
	return err
}

// keyFiles is every key as a file of its name or, with items, only those
// keys at their paths (a missing key is left out, as the kubelet does for
// an optional source).
func keyFiles(data map[string][]byte, items []corev1.KeyToPath) map[string][]byte {
	files := map[string][]byte{}
	if len(items) == 0 {
		for k, v := range data {
			files[k] = v
		}
		return files
	}
	for _, it := range items {
		if v, ok := data[it.Key]; ok {
			files[it.Path] = v
		}
	}
	return files
}

// ClusterTrustBundleVersions are the API versions a clusterTrustBundle
// projection is read from, preferred first.
var ClusterTrustBundleVersions = []schema.GroupVersionResource{
	{Group: "certificates.k8s.io", Version: "v1", Resource: "clustertrustbundles"},
	{Group: "certificates.k8s.io", Version: "v1beta1", Resource: "clustertrustbundles"},
}

// ServedClusterTrustBundleVersion is the ClusterTrustBundle API version the
// apiserver serves (empty when none).
func (cp *ControlPlane) ServedClusterTrustBundleVersion() (schema.GroupVersionResource, bool, error) {
	resources, err := cp.Admin.Discovery().ServerPreferredResources()
	if err != nil && len(resources) == 0 {
		return schema.GroupVersionResource{}, false, fmt.Errorf("discovery: %w", err)
	}
	for _, want := range ClusterTrustBundleVersions {
		for _, list := range resources {
			gv, err := schema.ParseGroupVersion(list.GroupVersion)
			if err != nil || gv != want.GroupVersion() {
				continue
			}
			for _, r := range list.APIResources {
				if r.Name == want.Resource {
					return want, true, nil
				}
			}
		}
	}
	// ServerPreferredResources lists only the preferred version of a group;
	// ask for the others directly.
	for _, want := range ClusterTrustBundleVersions {
		list, err := cp.Admin.Discovery().ServerResourcesForGroupVersion(want.GroupVersion().String())
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if r.Name == want.Resource {
				return want, true, nil
			}
		}
	}
	return schema.GroupVersionResource{}, false, nil
}

// clusterTrustBundleFile is what the kubelet projects for src: the named
// bundle's PEM, or the PEM of every bundle of src.SignerName its label
// selector matches (none without a selector), each certificate once.
func (cp *ControlPlane) clusterTrustBundleFile(ctx context.Context, src corev1.ClusterTrustBundleProjection) (map[string][]byte, error) {
	gvr, served, err := cp.ServedClusterTrustBundleVersion()
	if err != nil {
		return nil, err
	}
	optional := src.Optional != nil && *src.Optional
	if !served {
		if optional {
			return nil, nil
		}
		return nil, fmt.Errorf("clusterTrustBundle projection: the apiserver serves no certificates.k8s.io clustertrustbundles")
	}
	dyn, err := dynamic.NewForConfig(cp.AdminConfig)
	if err != nil {
		return nil, err
	}
	var bundles []string
	switch {
	case src.Name != nil:
		obj, err := dyn.Resource(gvr).Get(ctx, *src.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && optional {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("clustertrustbundle %s: %w", *src.Name, err)
		}
		pem, _, _ := unstructured.NestedString(obj.Object, "spec", "trustBundle")
		return map[string][]byte{src.Path: []byte(pem)}, nil
	case src.SignerName != nil && src.LabelSelector != nil:
		sel, err := metav1.LabelSelectorAsSelector(src.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("clusterTrustBundle projection of signer %s: %w", *src.SignerName, err)
		}
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return nil, fmt.Errorf("list clustertrustbundles: %w", err)
		}
		for _, obj := range list.Items {
			signer, _, _ := unstructured.NestedString(obj.Object, "spec", "signerName")
			if signer == *src.SignerName && sel.Matches(labels.Set(obj.GetLabels())) {
				pem, _, _ := unstructured.NestedString(obj.Object, "spec", "trustBundle")
				bundles = append(bundles, pem)
			}
		}
	}
	if len(bundles) == 0 && !optional {
		return nil, fmt.Errorf("clusterTrustBundle projection (name %v, signer %v) selects no bundle", ptrString(src.Name), ptrString(src.SignerName))
	}
	return map[string][]byte{src.Path: joinPEMOnce(bundles)}, nil
}

// joinPEMOnce concatenates PEM bundles, each block once, sorted: what the
// kubelet writes for a signer's bundles.
func joinPEMOnce(bundles []string) []byte {
	seen := map[string]bool{}
	var blocks []string
	for _, b := range bundles {
		rest := []byte(b)
		for {
			var p *pem.Block
			p, rest = pem.Decode(rest)
			if p == nil {
				break
			}
			blk := string(pem.EncodeToMemory(p))
			if !seen[blk] {
				seen[blk] = true
				blocks = append(blocks, blk)
			}
		}
	}
	sort.Strings(blocks)
	var out bytes.Buffer
	for _, b := range blocks {
		out.WriteString(b)
	}
	return out.Bytes()
}

func ptrString(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
