package approver

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func slimNode(obj any) (any, error) {
	if n, ok := obj.(*corev1.Node); ok {
		n.Status = corev1.NodeStatus{}
		n.ManagedFields = nil
		return n, nil
	}
	return obj, nil
}

// maxRequestBytes is the largest spec.request looked at: a kubelet's
// (PEM, one key, its names and addresses) is under 2 KiB even with RSA
// 4096; anything much larger is padding.
const maxRequestBytes = 16 << 10

// slimCSR keeps in the cache only what decisions read: no managed fields,
// none of the metadata a requester may pad and no decision reads (see
// trimMetadata), no request body once the request is decided (unless the
// built-in signer still has to sign it), and none of an oversize pending
// request (its size is kept aside and it is denied for it).
func (c *Controller) slimCSR(obj any) (any, error) {
	csr, ok := obj.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return obj, nil
	}
	csr.ManagedFields = nil
	if trimMetadata(&csr.ObjectMeta) {
		c.trimmed.Store(oversizeKey(csr), struct{}{})
	} else {
		c.trimmed.Delete(oversizeKey(csr))
	}
	switch {
	case isPending(csr):
		if n := len(csr.Spec.Request); n > maxRequestBytes {
			c.oversize.Store(oversizeKey(csr), n)
			csr.Spec.Request = nil
		}
	case c.opts.Signer != nil && awaitsOurSignature(csr):
	default:
		csr.Spec.Request = nil
		c.oversize.Delete(oversizeKey(csr))
	}
	return csr, nil
}

// trimMetadata drops the labels, annotations, finalizers and owner
// references and reports whether there were any. A node may set all of
// them on the requests it creates (256 KiB of annotations each, labels and
// finalizers without a count limit), and the requests it files beyond its
// denial budget stay pending, and cached, until kube-controller-manager
// removes them a day later; no decision reads them. Name, UID,
// resourceVersion and the creation time (the per-node order) are kept.
func trimMetadata(m *metav1.ObjectMeta) bool {
	had := len(m.Labels)+len(m.Annotations)+len(m.Finalizers)+len(m.OwnerReferences) > 0
	m.Labels, m.Annotations, m.Finalizers, m.OwnerReferences = nil, nil, nil, nil
	return had
}

// forWrite returns a copy of the cached csr to update through the approval
// or status subresource. Those keep the stored spec but take the metadata
// they are sent, so when the cache trimmed it the live object's is put
// back; the cached resourceVersion stays, and a request changed since
// fails with a conflict and is decided again.
func (c *Controller) forWrite(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) (*certificatesv1.CertificateSigningRequest, error) {
	upd := csr.DeepCopy()
	if _, trimmed := c.trimmed.Load(oversizeKey(csr)); !trimmed {
		return upd, nil
	}
	live, err := c.client.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get CSR %s for its metadata: %w", csr.Name, err)
	}
	upd.Labels, upd.Annotations, upd.Finalizers, upd.OwnerReferences = live.Labels, live.Annotations, live.Finalizers, live.OwnerReferences
	return upd, nil
}

// oversizeKey names one request: its UID and name (a request of the same
// name created again is another one).
func oversizeKey(csr *certificatesv1.CertificateSigningRequest) string {
	return string(csr.UID) + "/" + csr.Name
}
