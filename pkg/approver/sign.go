package approver

import (
	"context"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/pki"
)

// Signer issues the certificate of an approved request: with it the
// approver is the kubernetes.io/kubelet-serving signer, so approval and
// issuance are one step and not bound by kube-controller-manager's client
// QPS (KCM is then configured without kubelet-serving files and skips that
// signer). pki.ServingSigner is the implementation.
type Signer interface {
	Sign(a pki.Approved) ([]byte, error)
}

const reasonSignFailed = "SigningFailed"

// awaitsOurSignature reports whether we approved the request and it has no
// certificate yet: a signing that failed, or was cut short, after the
// approval was recorded.
func awaitsOurSignature(csr *certificatesv1.CertificateSigningRequest) bool {
	if len(csr.Status.Certificate) > 0 || csr.DeletionTimestamp != nil {
		return false
	}
	approved := false
	for _, c := range csr.Status.Conditions {
		switch {
		case c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed:
			return false
		case c.Type == certificatesv1.CertificateApproved && c.Reason == ReasonVerified:
			approved = true
		}
	}
	return approved
}

// sign issues the certificate for an approved request and writes it to
// status.certificate. The request was verified just now; the signer
// re-enforces usages and exactly the verified SANs.
func (c *Controller) sign(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
	cr, err := parseCSR(csr.Spec.Request)
	if err != nil {
		return fmt.Errorf("sign CSR %s: %w", csr.Name, err)
	}
	a := pki.Approved{CSR: csr.Spec.Request, CommonName: csr.Spec.Username, Organization: nodesGroup, DNSNames: cr.DNSNames}
	for _, ip := range cr.IPAddresses {
		a.IPs = append(a.IPs, ip.String())
	}
	if s := csr.Spec.ExpirationSeconds; s != nil {
		a.MaxLifetime = time.Duration(*s) * time.Second
	}
	certPEM, err := c.opts.Signer.Sign(a)
	if err != nil {
		c.recorder.Eventf(csr, corev1.EventTypeWarning, reasonSignFailed, "Approved but not signed, will retry: %v", err)
		return fmt.Errorf("sign CSR %s: %w", csr.Name, err)
	}
	upd, err := c.forWrite(ctx, csr)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write certificate of CSR %s: %w", csr.Name, err)
	}
	upd.Status.Certificate = certPEM
	_, err = c.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	c.metrics.writes.WithLabelValues("certificatesigningrequests/status", "update").Inc()
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write certificate of CSR %s: %w", csr.Name, err)
	}
	c.issued.Store(csr.Name, struct{}{})
	klog.FromContext(ctx).V(2).Info("Issued serving certificate", "csr", csr.Name)
	return nil
}
