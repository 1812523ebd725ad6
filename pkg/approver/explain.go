package approver

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Explain evaluates the CSR named name as the controller would and writes
// each check's result to w. It decides nothing and writes nothing to the
// cluster; an operator uses it to see why a request is (or would be)
// approved, denied or left pending.
func Explain(ctx context.Context, cfg Config, name string, w io.Writer) error {
	client, _, err := newKubeClients(cfg)
	if err != nil {
		return err
	}
	return explainWithClient(ctx, cfg, client, name, w)
}

func explainWithClient(ctx context.Context, cfg Config, client kubernetes.Interface, name string, w io.Writer) error {
	cloud, err := buildCloud(ctx, &cfg, false)
	if err != nil {
		return err
	}
	if cloud == nil {
		return fmt.Errorf("explain: no cloud: set --cloud-config")
	}
	csr, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get CSR %s: %w", name, err)
	}
	nodes := func(ctx context.Context, n string) (*corev1.Node, error) {
		node, err := client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return node, err
	}
	var sar SubjectAccessReviewer
	if cfg.SubjectAccessReview {
		sar = client.AuthorizationV1().SubjectAccessReviews()
	}
	e := NewEvaluator(cloud, nodes, sar, cfg.Policy)
	steps, d, evalErr := e.Explain(ctx, csr)
	fmt.Fprintf(w, "CSR %s  signer %s  requestor %s\n", csr.Name, csr.Spec.SignerName, csr.Spec.Username)
	for _, c := range csr.Status.Conditions {
		fmt.Fprintf(w, "  already %s (%s): %s\n", c.Type, c.Reason, c.Message)
	}
	for _, s := range steps {
		switch {
		case s.Err != nil:
			fmt.Fprintf(w, "  %-22s could not check: %v\n", s.Check, s.Err)
		case s.Decision.Verdict == Continue:
			fmt.Fprintf(w, "  %-22s ok\n", s.Check)
		default:
			fmt.Fprintf(w, "  %-22s %s %s: %s\n", s.Check, s.Decision.Verdict, s.Decision.Reason, s.Decision.Message)
		}
	}
	switch {
	case evalErr != nil:
		fmt.Fprintf(w, "=> left pending and retried: %v\n", evalErr)
	case d.Verdict == Approve:
		fmt.Fprintf(w, "=> approve %s: %s\n", d.Reason, d.Message)
	case d.Verdict == Deny && cfg.LeavePendingOnDeny:
		fmt.Fprintf(w, "=> would deny %s, left pending (--leave-pending-on-deny)\n", d.Reason)
	case d.Verdict == Deny:
		fmt.Fprintf(w, "=> deny %s\n", d.Reason)
	case d.Verdict == Wait:
		fmt.Fprintf(w, "=> left pending %s: %s\n", d.Reason, d.Message)
	default:
		fmt.Fprintf(w, "=> ignored: %s\n", d.Message)
	}
	return nil
}
