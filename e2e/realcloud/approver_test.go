//go:build e2e

package realcloud

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/approver"
)

// TestApproverCertifiesOnlyWhatTheCloudGaveTheNode is the approver against
// each cloud: a node is certified for its own fixed and floating IP, not
// for another server's, and not for the address of a port that a plain
// member of the cluster's project made carrying the node's device_id
// (real Neutron allows that port; it stays DOWN and unbound, and Nova lists
// its address for the server after its info-cache refresh).
func TestApproverCertifiesOnlyWhatTheCloudGaveTheNode(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	for _, b := range framework.Backends(t) {
		t.Run(b.Cloud.Name(), func(t *testing.T) { approverAgainstCloud(t, cp, b) })
	}
}

func approverAgainstCloud(t *testing.T, cp *framework.ControlPlane, b framework.Backend) {
	cloud := b.Cloud
	forger, ok := cloud.(framework.PortForger)
	if !ok {
		t.Fatalf("backend %s cannot act as a project member", cloud.Name())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	prefix := cloud.Name() + "-approver-"
	idxA, idxB := b.FirstNode+80, b.FirstNode+81
	nameA, nameB := prefix+"a", prefix+"b"
	srvA := cloud.CreateServer(t, nameA, idxA, "m1.small", "az-1")
	cloud.CreateServer(t, nameB, idxB, "m1.small", "az-2")
	floating := cloud.AttachFloatingIP(t, srvA.ID)
	cp.StartApprover(ctx, t, cloud.ReaderCloudConf(t), approver.Options{}) // the approver only reads: reader
	for _, n := range []struct {
		name string
		idx  int
	}{{nameA, idxA}, {nameB, idxB}} {
		cp.DeleteNodeAtEnd(t, n.name)
		deleteCSRsAtEnd(t, cp, n.name)
		cp.StartNode(t, framework.NodeOptions{Name: n.name, IP: framework.NodeIP(n.idx)})
	}
	asA := asNode(t, cp, nameA)

	t.Run("a node whose server exists is certified for its fixed IP, and for its floating IP", func(t *testing.T) {
		csr, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, nameA, 2*time.Minute, func(c *certificatesv1.CertificateSigningRequest) bool {
			return len(c.Status.Certificate) > 0
		})
		if err != nil {
			t.Fatal(err)
		}
		if c := framework.Condition(csr, certificatesv1.CertificateApproved); c == nil || c.Reason != approver.ReasonVerified || !strings.Contains(c.Message, srvA.ID) {
			t.Fatalf("the kubelet's own request: %s; want approved, verified against %s", framework.DescribeCSR(csr), srvA.ID)
		}
		c := decided(ctx, t, cp, requestServing(ctx, t, asA, nameA, framework.NodeIP(idxA), floating))
		if a := framework.Condition(c, certificatesv1.CertificateApproved); a == nil || a.Reason != approver.ReasonVerified {
			t.Fatalf("fixed IP %s with floating IP %s: %s; want approved", framework.NodeIP(idxA), floating, framework.DescribeCSR(c))
		}
	})

	t.Run("a request for another server's IP is denied naming that IP", func(t *testing.T) {
		c := decided(ctx, t, cp, requestServing(ctx, t, asA, nameA, framework.NodeIP(idxA), framework.NodeIP(idxB)))
		d := framework.Condition(c, certificatesv1.CertificateDenied)
		if d == nil || d.Reason != approver.ReasonIPNotOfInstance || !strings.Contains(d.Message, framework.NodeIP(idxB)) {
			t.Fatalf("request for %s's IP: %s; want denied %s naming %s", nameB, framework.DescribeCSR(c), approver.ReasonIPNotOfInstance, framework.NodeIP(idxB))
		}
		if len(c.Status.Certificate) > 0 {
			t.Errorf("a certificate was issued for a denied request")
		}
	})

	t.Run("a port a project member forged with the node's device_id is refused, before and after Nova lists its address", func(t *testing.T) {
		forgedPort, forgedIP := forger.ForgeServerPort(t, srvA.ID)
		forgedAt := time.Now()
		rc, real := cloud.(*framework.RealCloud)
		adminView := func() framework.AdminPort {
			if real {
				return rc.PortAsAdmin(t, forgedPort)
			}
			return framework.AdminPort{ID: forgedPort, Status: "(cloudsim: not read)"}
		}
		t.Logf("%s: forged %s", cloud.Name(), adminView())
		// The approver reads Neutron's ports: the forged one is DOWN, so its
		// address is reported for the server yet never certified. Whether it
		// is the server's NIC not plugged yet (an OVN outage leaves real
		// NICs DOWN too) cannot be told from a non-admin answer, so the
		// request is left pending with an AddressNotReady Event; where the
		// approver's answer shows the port bound to no host, it is denied.
		request := func() (string, bool) {
			t.Helper()
			name := requestServing(ctx, t, asA, nameA, framework.NodeIP(idxA), forgedIP)
			return refused(ctx, t, cp, name, forgedIP)
		}
		if what, ok := request(); !ok {
			t.Fatalf("right after the forgery: request with the forged port's %s: %s; want it pending (%s) or denied (%s), the port not ACTIVE (%s)",
				forgedIP, what, approver.ReasonAddressNotReady, approver.ReasonUntrustedAddress, adminView())
		} else {
			t.Logf("%s: right after the forgery: %s", cloud.Name(), what)
		}

		// Nova lists the forged address for the server once its info cache
		// is refreshed: 7-57 s after the forgery on the real cloud (nova-
		// compute's periodic heal, fake driver or not), at once on cloudsim,
		// whose Nova view is built from Neutron's ports.
		var last framework.TestServer
		err := wait.PollUntilContextTimeout(ctx, time.Second, 150*time.Second, true, func(context.Context) (bool, error) {
			last, _ = cloud.GetServer(t, srvA.ID)
			return slices.Contains(last.FixedIPs, forgedIP), nil
		})
		if err != nil {
			t.Fatalf("Nova did not list the forged address %s for server %s within 150 s (last seen %v): %v", forgedIP, srvA.ID, last.FixedIPs, err)
		}
		t.Logf("%s: Nova lists the forged address %s for the server %s after the forgery; %s", cloud.Name(), forgedIP, time.Since(forgedAt).Round(time.Second), adminView())
		// Observed on the real cloud: the refresh also binds the forged port
		// (device_owner rewritten to compute:<az>, binding:host_id the
		// server's host, vif_type ovs). A binding host is therefore no proof
		// of a NIC; only the status is: nothing plugs the port on the
		// hypervisor, so it stays DOWN (the lab's chassis loop, standing in
		// for ovn-controller, brings up only the NICs of servers it booted).
		if what, ok := request(); !ok {
			t.Fatalf("once Nova lists the address: request with the forged port's %s: %s; want it pending (%s) or denied (%s), the port not ACTIVE (%s)",
				forgedIP, what, approver.ReasonAddressNotReady, approver.ReasonUntrustedAddress, adminView())
		} else {
			t.Logf("%s: once Nova lists the address: %s", cloud.Name(), what)
		}
	})
}

// refused waits for the approver to refuse CSR name for the address ip:
// denied as UntrustedAddress, or left pending with an AddressNotReady
// Event naming ip (and still pending, without a certificate, 5 s after
// that Event). It says what it saw.
func refused(ctx context.Context, t *testing.T, cp *framework.ControlPlane, name, ip string) (string, bool) {
	t.Helper()
	var last *certificatesv1.CertificateSigningRequest
	var waited bool
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := cp.Admin.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // a slow apiserver is no verdict
		}
		last = c
		if !framework.IsPending(c) {
			return true, nil
		}
		events, err := cp.Admin.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, nil
		}
		for _, e := range events.Items {
			if e.Reason == approver.ReasonAddressNotReady && strings.Contains(e.Message, ip) && strings.Contains(e.Message, "not ACTIVE") {
				waited = true
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		desc := "never read"
		if last != nil {
			desc = framework.DescribeCSR(last)
		}
		return fmt.Sprintf("neither decided nor left pending with an Event: %s", desc), false
	}
	if waited {
		time.Sleep(5 * time.Second)
		c, err := cp.Admin.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Sprintf("read back: %v", err), false
		}
		return "left pending, " + approver.ReasonAddressNotReady + ": " + framework.DescribeCSR(c), framework.IsPending(c) && len(c.Status.Certificate) == 0
	}
	d := framework.Condition(last, certificatesv1.CertificateDenied)
	return framework.DescribeCSR(last), d != nil && d.Reason == approver.ReasonUntrustedAddress && strings.Contains(d.Message, ip) &&
		len(last.Status.Certificate) == 0
}

// decided waits for the approver's decision on the CSR and returns it.
func decided(ctx context.Context, t *testing.T, cp *framework.ControlPlane, name string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	var last *certificatesv1.CertificateSigningRequest
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := cp.Admin.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // a slow apiserver is no verdict
		}
		last = c
		return !framework.IsPending(c), nil
	})
	if err != nil {
		desc := "never read"
		if last != nil {
			desc = framework.DescribeCSR(last)
		}
		t.Fatalf("CSR %s not decided: %v (%s)", name, err, desc)
	}
	return last
}

// asNode is a client authenticated as system:node:<name> (the admin
// impersonating it, as the kubelet's client certificate would be).
func asNode(t *testing.T, cp *framework.ControlPlane, name string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(cp.AdminConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:node:" + name, Groups: []string{"system:nodes", "system:authenticated"}}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// requestServing creates a kubelet-serving CSR as a kubelet would, for the
// node and ips, and returns its name.
func requestServing(ctx context.Context, t *testing.T, client kubernetes.Interface, node string, ips ...string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeletServingSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create CSR as node %s for %v: %v", node, ips, err)
	}
	return csr.Name
}

// deleteCSRsAtEnd deletes the node's CSRs when the test ends, so that the
// next backend's approver does not decide them against another cloud.
func deleteCSRsAtEnd(t *testing.T, cp *framework.ControlPlane, node string) {
	t.Cleanup(func() {
		ctx := context.Background()
		list, err := cp.Admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Errorf("list CSRs to delete node %s's: %v", node, err)
			return
		}
		for _, c := range list.Items {
			if c.Spec.Username == "system:node:"+node {
				_ = cp.Admin.CertificatesV1().CertificateSigningRequests().Delete(ctx, c.Name, metav1.DeleteOptions{})
			}
		}
	})
}
