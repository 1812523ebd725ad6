package framework

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitForCSR waits for a CSR of signer that belongs to node (requested by
// the node's user, or naming it in its subject) and satisfies cond; it
// returns the newest such request.
func (cp *ControlPlane) WaitForCSR(ctx context.Context, signer, node string, timeout time.Duration, cond func(*certificatesv1.CertificateSigningRequest) bool) (*certificatesv1.CertificateSigningRequest, error) {
	var found *certificatesv1.CertificateSigningRequest
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		var match *certificatesv1.CertificateSigningRequest
		for i := range list.Items {
			c := &list.Items[i]
			if c.Spec.SignerName != signer || !requestedFor(c, node) {
				continue
			}
			found = c
			if cond(c) && (match == nil || c.CreationTimestamp.After(match.CreationTimestamp.Time)) {
				match = c
			}
		}
		if match != nil {
			found = match
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return found, fmt.Errorf("no %s CSR of node %s in the wanted state (last seen: %s): %w", signer, node, DescribeCSR(found), err)
	}
	return found, nil
}

// requestedFor tells whether a CSR is the named node's: serving CSRs by the
// requesting node user, client CSRs by the subject in the request.
func requestedFor(c *certificatesv1.CertificateSigningRequest, node string) bool {
	if c.Spec.Username == "system:node:"+node {
		return true
	}
	req, err := ParseCSR(c)
	return err == nil && req.Subject.CommonName == "system:node:"+node
}

// ParseCSR decodes the request of a CSR object.
func ParseCSR(c *certificatesv1.CertificateSigningRequest) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(c.Spec.Request)
	if block == nil {
		return nil, fmt.Errorf("CSR %s: no PEM block", c.Name)
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// Condition returns the CSR's condition of type typ, or nil.
func Condition(c *certificatesv1.CertificateSigningRequest, typ certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequestCondition {
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].Type == typ && c.Status.Conditions[i].Status == corev1.ConditionTrue {
			return &c.Status.Conditions[i]
		}
	}
	return nil
}

// IsPending reports whether nobody has decided the CSR yet.
func IsPending(c *certificatesv1.CertificateSigningRequest) bool {
	return len(c.Status.Conditions) == 0 && len(c.Status.Certificate) == 0
}

// DescribeCSR is a one-line summary for failure messages.
func DescribeCSR(c *certificatesv1.CertificateSigningRequest) string {
	if c == nil {
		return "none"
	}
	s := fmt.Sprintf("%s by %s", c.Name, c.Spec.Username)
	for _, cond := range c.Status.Conditions {
		s += fmt.Sprintf(" [%s %s: %s]", cond.Type, cond.Reason, cond.Message)
	}
	if len(c.Status.Certificate) > 0 {
		s += " (issued)"
	}
	return s
}
