//go:build e2e

// Package signer tests stackward-approver as the kubelet-serving signer
// (--sign-with-ca-dir) on a control plane whose kube-controller-manager has
// no kubelet-serving signer files and so signs none.
package signer

import (
	"context"
	"crypto/x509"
	"path/filepath"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/approver"
	"github.com/stackward/stackward/pkg/pki"
)

func TestMain(m *testing.M) { framework.Main(m) }

func TestTheApproverSignsWhatItApproves(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cp, err := framework.StartControlPlaneWith(ctx, framework.ToolsDir(t), framework.ControlPlaneOptions{ApproverSigns: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(cp.Logs())
		}
		cp.Stop()
	})
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{})
	conf := cloud.CloudConf(t, "")
	srv := cloud.CreateServer(t, "signed-1", 31, "m1.small", "az-1")
	cloud.CreateServer(t, "signed-2", 32, "m1.small", "az-1")

	// Without the approver signing, KCM leaves an approved request unsigned.
	stop, err := cp.RunApprover(ctx, conf, approver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cp.StartNode(t, framework.NodeOptions{Name: "signed-2", IP: framework.NodeIP(32)})
	csr, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, "signed-2", time.Minute, func(c *certificatesv1.CertificateSigningRequest) bool {
		return framework.Condition(c, certificatesv1.CertificateApproved) != nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 8*time.Second, true, func(ctx context.Context) (bool, error) {
		c, err := cp.Admin.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
		if err == nil && len(c.Status.Certificate) > 0 {
			t.Fatalf("kube-controller-manager signed %s although it has no kubelet-serving files", c.Name)
		}
		return false, nil
	})
	if !wait.Interrupted(err) {
		t.Fatal(err)
	}
	stop()

	// With --sign-with-ca-dir the approver issues them: the pending one
	// above (approved, unsigned) and a new node's.
	stop, err = cp.RunApproverWith(ctx, conf, approver.Options{}, func(cfg *approver.Config) {
		cfg.SignWithCADir = filepath.Join(framework.KubernetesDir, "pki")
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	node := cp.StartNode(t, framework.NodeOptions{Name: "signed-1", IP: framework.NodeIP(31)})
	cert, err := node.WaitForServingCertificate(ctx, cp.ServingCACert, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if life := time.Until(cert.NotAfter); life > pki.DefaultServingCertLifetime+time.Minute || life < pki.DefaultServingCertLifetime-time.Hour {
		t.Errorf("serving certificate of %s valid for %s more; want the approver's %s", srv.Name, life.Round(time.Minute), pki.DefaultServingCertLifetime)
	}
	if got := cert.Subject.String(); got != "CN=system:node:signed-1,O=system:nodes" {
		t.Errorf("subject %q; want the approved CN and O only", got)
	}
	if len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth || cert.IsCA {
		t.Errorf("ext key usages %v, CA %v; want server auth only", cert.ExtKeyUsage, cert.IsCA)
	}
	if _, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, "signed-2", time.Minute, func(c *certificatesv1.CertificateSigningRequest) bool {
		return c.Name == csr.Name && len(c.Status.Certificate) > 0
	}); err != nil {
		t.Errorf("the request approved before the signer ran was never signed: %v", err)
	}
}
