//go:build e2e

package approver

import (
	"context"
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/approver"
)

// TestTheTrustBoundary: serving certificates come from the kubelet-serving
// CA, which only the apiserver trusts, and carry only addresses the cloud
// controls.
func TestTheTrustBoundary(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conf := cloud.CloudConf(t, "")
	parent := t

	t.Run("a serving certificate does not verify against the cluster CA, and the apiserver reaches the kubelet through it", func(t *testing.T) {
		stop, err := cp.RunApprover(ctx, conf, approver.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		cloud.CreateServer(t, "trust-1", 21, "m1.small", "az-1")
		node := cp.StartNode(parent, framework.NodeOptions{Name: "trust-1", IP: framework.NodeIP(21)})
		cert, err := node.WaitForServingCertificate(ctx, cp.ServingCACert, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		// A pod's view: kube-root-ca.crt is the cluster CA.
		pods := x509.NewCertPool()
		pods.AppendCertsFromPEM(cp.CACert)
		_, err = cert.Verify(x509.VerifyOptions{Roots: pods, DNSName: framework.NodeIP(21), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		var unknown x509.UnknownAuthorityError
		if !errors.As(err, &unknown) {
			t.Errorf("the kubelet's serving certificate verified against the cluster CA (err %v): it could pass for the apiserver", err)
		}
		if _, err := node.ServingCertificate(ctx, cp.CACert); err == nil {
			t.Errorf("a TLS client trusting the cluster CA accepted the kubelet")
		}
		// The apiserver's kubelet client (kubectl logs/exec, metrics) verifies
		// it with --kubelet-certificate-authority.
		var body []byte
		err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			body, err = cp.Admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/trust-1/proxy/healthz").DoRaw(ctx)
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("GET /api/v1/nodes/trust-1/proxy/healthz through the apiserver: %v: %s", err, body)
		}
		if strings.TrimSpace(string(body)) != "ok" {
			t.Errorf("kubelet /healthz through the apiserver said %q", body)
		}
	})

	t.Run("a kubelet asking for its server's access IP is denied naming the IP", func(t *testing.T) {
		stop, err := cp.RunApprover(ctx, conf, approver.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		cp.StartCCM(ctx, t, conf)
		const accessIP = "192.0.2.77"
		createServer(t, cloud, cloudsim.ServerSpec{Name: "trust-2", Flavor: "m1.small", AZ: "az-1", AccessIPv4: accessIP,
			NICs: []cloudsim.NICSpec{{Network: framework.LabNetwork, FixedIP: framework.NodeIP(22)}}})
		cp.StartNode(t, framework.NodeOptions{Name: "trust-2", IP: framework.NodeIP(22)})
		// The CCM publishes the access IP as an ExternalIP (as upstream
		// does); the kubelet then asks for it, and must be refused.
		csr, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, "trust-2", 2*time.Minute, func(c *certificatesv1.CertificateSigningRequest) bool {
			return framework.Condition(c, certificatesv1.CertificateDenied) != nil
		})
		if err != nil {
			t.Fatal(err)
		}
		denied := framework.Condition(csr, certificatesv1.CertificateDenied)
		if denied.Reason != approver.ReasonUntrustedAddress || !strings.Contains(denied.Message, accessIP) || !strings.Contains(denied.Message, "accessIPv4") {
			t.Errorf("denial %s %q; want %s naming %s as the accessIPv4", denied.Reason, denied.Message, approver.ReasonUntrustedAddress, accessIP)
		}
		if len(csr.Status.Certificate) > 0 {
			t.Error("a certificate was issued for the access IP")
		}
		assertEvent(ctx, t, cp, csr.Name, denied.Reason)
	})

	t.Run("the kubernetes Service IP is denied even when the cloud reports it and access IPs are trusted", func(t *testing.T) {
		stop, err := cp.RunApprover(ctx, conf, approver.Options{Policy: approver.Policy{AllowAccessIPs: true}})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		cp.StartCCM(ctx, t, conf)
		svc, err := cp.Admin.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		serviceIP := svc.Spec.ClusterIP
		createServer(t, cloud, cloudsim.ServerSpec{Name: "trust-3", Flavor: "m1.small", AZ: "az-1", AccessIPv4: serviceIP,
			NICs: []cloudsim.NICSpec{{Network: framework.LabNetwork, FixedIP: framework.NodeIP(23)}}})
		cp.StartNode(t, framework.NodeOptions{Name: "trust-3", IP: framework.NodeIP(23)})
		csr, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, "trust-3", 2*time.Minute, func(c *certificatesv1.CertificateSigningRequest) bool {
			return framework.Condition(c, certificatesv1.CertificateDenied) != nil
		})
		if err != nil {
			t.Fatal(err)
		}
		denied := framework.Condition(csr, certificatesv1.CertificateDenied)
		if denied.Reason != approver.ReasonForbiddenIP || !strings.Contains(denied.Message, serviceIP) || !strings.Contains(denied.Message, "Service CIDR") {
			t.Errorf("denial %s %q; want %s naming the Service IP %s", denied.Reason, denied.Message, approver.ReasonForbiddenIP, serviceIP)
		}
	})

	t.Run("a shut-off server's request stays pending with an Event naming the state, and is approved once it is started", func(t *testing.T) {
		stop, err := cp.RunApprover(ctx, conf, approver.Options{WaitRecheck: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		srv := cloud.CreateServer(t, "trust-4", 24, "m1.small", "az-2")
		if err := cloud.Sim.SetServerStatus(srv.ID, "SHUTOFF"); err != nil {
			t.Fatal(err)
		}
		node := cp.StartNode(t, framework.NodeOptions{Name: "trust-4", IP: framework.NodeIP(24)})
		csr, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, "trust-4", time.Minute, func(*certificatesv1.CertificateSigningRequest) bool { return true })
		if err != nil {
			t.Fatal(err)
		}
		assertEvent(ctx, t, cp, csr.Name, approver.ReasonInstanceNotRunning)
		events, err := cp.Admin.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + csr.Name})
		if err != nil {
			t.Fatal(err)
		}
		named := false
		for _, e := range events.Items {
			named = named || (e.Reason == approver.ReasonInstanceNotRunning && strings.Contains(e.Message, "SHUTOFF"))
		}
		if !named {
			t.Errorf("no %s Event naming SHUTOFF on %s", approver.ReasonInstanceNotRunning, csr.Name)
		}
		c, err := cp.Admin.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !framework.IsPending(c) {
			t.Fatalf("the request of a shut-off server was decided: %s", framework.DescribeCSR(c))
		}
		if err := cloud.Sim.SetServerStatus(srv.ID, "ACTIVE"); err != nil {
			t.Fatal(err)
		}
		if _, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, "trust-4", time.Minute, func(c *certificatesv1.CertificateSigningRequest) bool {
			return c.Name == csr.Name && len(c.Status.Certificate) > 0
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := node.WaitForServingCertificate(ctx, cp.ServingCACert, time.Minute); err != nil {
			t.Fatal(err)
		}
	})
}

func createServer(t *testing.T, cloud *framework.SimCloud, spec cloudsim.ServerSpec) cloudsim.Server {
	t.Helper()
	srv, err := cloud.Sim.CreateServer(spec)
	if err != nil {
		t.Fatalf("create server %s: %v", spec.Name, err)
	}
	return srv
}
