package approver

import (
	"context"
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate"

	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/openstack"
)

// kubeletCSR builds a request the way the kubelet's serving certificate
// manager does: SANs from the Node's status addresses, usages by key type.
func kubeletCSR(t *testing.T, nodeName string, addrs []corev1.NodeAddress, key crypto.Signer) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: nodeUserPrefix + nodeName, Organization: []string{nodesGroup}}}
	for _, a := range addrs {
		switch a.Type {
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(a.Address))
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			tmpl.DNSNames = append(tmpl.DNSNames, a.Address)
		}
	}
	pemBytes, err := cert.MakeCSRFromTemplate(key, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	var priv any = key
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr-kubelet"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pemBytes,
			SignerName: certificatesv1.KubeletServingSignerName,
			Username:   nodeUserPrefix + nodeName,
			Groups:     []string{nodesGroup, "system:authenticated"},
			Usages:     certificate.DefaultKubeletServingGetUsages(priv),
		},
	}
}

// TestWhatTheCCMPublishesIsApproved: a kubelet asking for exactly the
// addresses the CCM puts on its Node (nodeaddress.For) is approved, with
// RSA and ECDSA keys, dual-stack, several networks and access IPs; and the
// early-join form (only --node-ip and the hostname) too.
func TestWhatTheCCMPublishesIsApproved(t *testing.T) {
	srv := openstack.Server{ID: "id-dual", Name: "worker-1", Status: openstack.StatusActive, AccessIPv4: "203.0.113.9", TenantID: testProject,
		Addresses: map[string][]openstack.ServerAddress{
			"private": {{Addr: "10.0.0.21", Version: 4, Type: openstack.AddressFixed}, {Addr: "fd00::21", Version: 6, Type: openstack.AddressFixed},
				{Addr: "198.18.0.21", Version: 4, Type: openstack.AddressFloating}},
			"storage": {{Addr: "192.168.50.21", Version: 4, Type: openstack.AddressFixed}},
		}}
	cloud := &fakeCloud{servers: []openstack.Server{srv}}
	for _, opts := range []nodeaddress.Options{{}, {PublicNetworkNames: []string{"storage"}}, {InternalNetworkNames: []string{"private"}}} {
		addrs, err := nodeaddress.For(&srv, nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		policy := testPolicy
		policy.Addresses = opts
		policy.AllowAccessIPs = true
		e := NewEvaluator(cloud, nodeGetter(node("worker-1", "openstack:///id-dual")), nil, policy)
		for _, key := range []string{"rsa2048", "p256"} {
			d, err := e.Evaluate(context.Background(), kubeletCSR(t, "worker-1", addrs, testKeys()[key]))
			if err != nil || d.Verdict != Approve {
				t.Errorf("options %+v, key %s: %s/%s (%s), %v; want approved", opts, key, d.Verdict, d.Reason, d.Message, err)
			}
		}
		// Without --allow-access-ips the CCM still publishes the access
		// IP, but the approver does not certify it.
		policy.AllowAccessIPs = false
		e = NewEvaluator(cloud, nodeGetter(node("worker-1", "openstack:///id-dual")), nil, policy)
		d, err := e.Evaluate(context.Background(), kubeletCSR(t, "worker-1", addrs, testKeys()["p256"]))
		if err != nil || d.Verdict != Deny || d.Reason != ReasonUntrustedAddress || !strings.Contains(d.Message, "203.0.113.9") {
			t.Errorf("options %+v without --allow-access-ips: %s/%s (%s), %v; want denied naming the access IP", opts, d.Verdict, d.Reason, d.Message, err)
		}
	}
	early := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.21"}, {Type: corev1.NodeHostName, Address: "worker-1"}}
	e := NewEvaluator(cloud, registered, nil, testPolicy)
	if d, err := e.Evaluate(context.Background(), kubeletCSR(t, "worker-1", early, testKeys()["p256"])); err != nil || d.Verdict != Approve {
		t.Errorf("early join: %s/%s (%s), %v; want approved", d.Verdict, d.Reason, d.Message, err)
	}
	// With storage filtered out by internal-network-name, its address is
	// not the node's, exactly as the CCM would not publish it.
	all, _ := nodeaddress.For(&srv, nil, nodeaddress.Options{})
	policy := testPolicy
	policy.Addresses = nodeaddress.Options{InternalNetworkNames: []string{"private"}}
	e = NewEvaluator(cloud, registered, nil, policy)
	if d, err := e.Evaluate(context.Background(), kubeletCSR(t, "worker-1", all, testKeys()["p256"])); err != nil || d.Verdict != Deny || d.Reason != ReasonUntrustedAddress {
		t.Errorf("address on a network the CCM leaves out: %s/%s (%s), %v; want denied", d.Verdict, d.Reason, d.Message, err)
	}
}
