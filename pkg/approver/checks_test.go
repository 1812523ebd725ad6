package approver

import (
	"context"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func basicConstraints(t *testing.T, isCA bool) pkix.Extension {
	t.Helper()
	v, err := asn1.Marshal(struct {
		IsCA bool `asn1:"optional"`
	}{isCA})
	if err != nil {
		t.Fatal(err)
	}
	return pkix.Extension{Id: oidBasicConstraints, Critical: true, Value: v}
}

func tamper(t *testing.T, s csrSpec) []byte {
	t.Helper()
	block, _ := pem.Decode(csrPEM(t, s))
	block.Bytes[len(block.Bytes)-3] ^= 0xff // inside the signature
	return pem.EncodeToMemory(block)
}

// TestMaliciousRequestsAreNeverApproved is the approver's promise: each of
// these requests is denied (or, where the answer may change, left pending),
// for the reason given, and never approved.
func TestMaliciousRequestsAreNeverApproved(t *testing.T) {
	a := func(s csrSpec) csrSpec {
		s.node = orDefault(s.node, "node-a")
		if s.ips == nil {
			s.ips = []string{"10.0.0.10"}
		}
		return s
	}
	tests := []struct {
		name   string
		spec   csrSpec
		nodes  []*corev1.Node
		reason string
		inMsg  string // the message names the offending value
		// verdict is Deny unless set (Wait: left pending with an Event).
		verdict Verdict
		// noNode: the requestor has no Node (else one is registered).
		noNode bool
	}{
		{name: "IP of another server is denied", spec: a(csrSpec{ips: []string{"10.0.0.10", "10.0.0.11"}}), reason: ReasonIPNotOfInstance, inMsg: "10.0.0.11"},
		{name: "floating IP of another server is denied", spec: a(csrSpec{ips: []string{"198.18.0.11"}}), reason: ReasonIPNotOfInstance, inMsg: "198.18.0.11"},
		{name: "loopback IP is denied", spec: a(csrSpec{ips: []string{"127.0.0.1"}}), reason: ReasonForbiddenIP, inMsg: "127.0.0.1 is a loopback address"},
		{name: "an accessIPv4 the cloud reports is denied, naming it", spec: csrSpec{node: "node-acc", ips: []string{"10.0.0.20", "203.0.113.20"}}, reason: ReasonUntrustedAddress, inMsg: "203.0.113.20 is the server's accessIPv4"},
		{name: "the kubernetes Service IP is denied even when the cloud reports it", spec: csrSpec{node: "node-svc", ips: []string{"10.0.0.21", "10.96.0.1"}}, reason: ReasonForbiddenIP, inMsg: "10.96.0.1 is in the Service CIDR (10.96.0.0/12)"},
		{name: "a control-plane endpoint that is another node's address is denied", spec: a(csrSpec{ips: []string{"10.0.0.10", "10.0.0.2"}}), reason: ReasonForbiddenIP, inMsg: "10.0.0.2 is a control-plane endpoint"},
		{name: "a control-plane VIP no node owns is denied", spec: a(csrSpec{ips: []string{"10.0.0.10", "10.0.0.3"}}), reason: ReasonForbiddenIP, inMsg: "10.0.0.3 is a control-plane endpoint"},
		{name: "a request with no Node (a bootstrap token's holder naming a project server) is left pending", spec: a(csrSpec{}), noNode: true, verdict: Wait, reason: ReasonNodeNotRegistered, inMsg: "no Node node-a exists"},
		{name: "a request of a Node being deleted is left pending", spec: a(csrSpec{}), nodes: []*corev1.Node{deletingNode("node-a")}, verdict: Wait, reason: ReasonNodeNotRegistered, inMsg: "being deleted"},
		{name: "a server being deleted (ACTIVE, task_state deleting) is denied", spec: csrSpec{node: "node-going", ips: []string{"10.0.0.27"}}, reason: ReasonInstanceDeleted, inMsg: "task_state deleting"},
		{name: "the IP of a DOWN port with the server's device_id (a member's forgery, or a NIC not up yet: a non-admin cannot tell) is left pending", spec: csrSpec{node: "node-forged", ips: []string{"10.0.0.28", "10.0.0.29"}}, verdict: Wait, reason: ReasonAddressNotReady, inMsg: `port port-forged has status "DOWN"`},
		{name: "the IP of a member-forged port an administrator's answer shows bound to no host is denied", spec: csrSpec{node: "node-forged-admin", ips: []string{"10.0.0.30", "10.0.0.31"}}, reason: ReasonUntrustedAddress, inMsg: "port port-forged-admin is bound to no host"},
		{name: "asking for ten years is denied, naming the maximum", spec: a(csrSpec{expiration: ptr(int32(10 * 365 * 24 * 3600))}), reason: ReasonExpirationTooLong, inMsg: "maximum 48h0m0s"},
		{name: "more SANs than any node has is denied before the cloud is asked", spec: a(csrSpec{ips: manyIPs(65)}), reason: ReasonTooManySANs, inMsg: "65 SANs"},
		{name: "the node's own IP repeated is denied", spec: a(csrSpec{ips: []string{"10.0.0.10", "10.0.0.10"}}), reason: ReasonTooManySANs, inMsg: "10.0.0.10 is requested more than once"},
		{name: "the node's name repeated in other case is denied", spec: a(csrSpec{dns: []string{"node-a", "NODE-A"}}), reason: ReasonTooManySANs, inMsg: "NODE-A"},
		{name: "a request larger than a kubelet ever sends is denied unparsed", spec: a(csrSpec{raw: make([]byte, 17<<10)}), reason: ReasonRequestTooLarge, inMsg: "17408 bytes"},
		{name: "OU=system:masters in the subject is denied", spec: a(csrSpec{ou: []string{"system:masters"}}), reason: ReasonSubjectMismatch, inMsg: "system:masters"},
		{name: "IPv6 loopback is denied", spec: a(csrSpec{ips: []string{"::1"}}), reason: ReasonForbiddenIP, inMsg: "loopback"},
		{name: "link-local (the metadata service) is denied", spec: a(csrSpec{ips: []string{"10.0.0.10", "169.254.169.254"}}), reason: ReasonForbiddenIP, inMsg: "link-local"},
		{name: "multicast is denied", spec: a(csrSpec{ips: []string{"224.0.0.1"}}), reason: ReasonForbiddenIP, inMsg: "multicast"},
		{name: "the unspecified address is denied", spec: a(csrSpec{ips: []string{"0.0.0.0"}}), reason: ReasonForbiddenIP, inMsg: "unspecified"},
		{name: "a server of another project is denied", spec: csrSpec{node: "node-other", ips: []string{"10.0.0.22"}}, reason: ReasonInstanceOtherProject, inMsg: `project "other"`},
		{name: "a fixed IP on a port of another project is denied", spec: csrSpec{node: "node-xport", ips: []string{"10.0.0.23"}}, reason: ReasonUntrustedAddress, inMsg: `belongs to project "other"`},
		{name: "a fixed IP on another project's network is denied", spec: csrSpec{node: "node-xnet", ips: []string{"10.0.0.24"}}, reason: ReasonUntrustedAddress, inMsg: `of project "other"`},
		{name: "an address Nova lists that no port of the server carries is denied", spec: csrSpec{node: "node-noport", ips: []string{"10.0.0.25"}}, reason: ReasonUntrustedAddress, inMsg: "not a fixed IP of a trusted port"},
		{name: "a non-ASCII node name is denied", spec: csrSpec{node: "node-\u212a", ips: []string{"10.0.0.26"}}, reason: ReasonNonASCIIName, inMsg: "node name"},
		{name: "a server name with KELVIN SIGN does not match node k", spec: csrSpec{node: "node-k", ips: []string{"10.0.0.26"}}, nodes: []*corev1.Node{node("node-k", "openstack:///id-kelvin")}, reason: ReasonNonASCIIName, inMsg: "instance name"},
		{name: "IPv6 address the cloud never reported is denied", spec: a(csrSpec{ips: []string{"10.0.0.10", "fd00::10"}}), reason: ReasonIPNotOfInstance, inMsg: "fd00::10"},
		{name: "wildcard DNS name is denied", spec: a(csrSpec{dns: []string{"*.cluster.example"}}), reason: ReasonForbiddenDNSName, inMsg: "*.cluster.example"},
		{name: "kubernetes.default is denied", spec: a(csrSpec{dns: []string{"node-a", "kubernetes.default"}}), reason: ReasonForbiddenDNSName, inMsg: "kubernetes.default"},
		{name: "kubernetes.default.svc.cluster.local is denied", spec: a(csrSpec{dns: []string{"kubernetes.default.svc.cluster.local"}}), reason: ReasonForbiddenDNSName},
		{name: "a kubernetes* name that is not the node's is denied", spec: a(csrSpec{dns: []string{"kubernetes-api"}}), reason: ReasonForbiddenDNSName, inMsg: "kubernetes-api"},
		{name: "a node named kubernetes may not have that name", spec: csrSpec{node: "kubernetes", ips: []string{"10.0.0.17"}, dns: []string{"kubernetes"}}, reason: ReasonForbiddenDNSName},
		{name: "Kubernetes in capitals is denied", spec: a(csrSpec{dns: []string{"KUBERNETES"}}), reason: ReasonForbiddenDNSName},
		{name: "email SAN is denied", spec: a(csrSpec{emails: []string{"root@node-a"}}), reason: ReasonDisallowedSAN, inMsg: "root@node-a"},
		{name: "URI SAN is denied", spec: a(csrSpec{uris: []string{"spiffe://cluster/ns/kube-system/sa/admin"}}), reason: ReasonDisallowedSAN, inMsg: "spiffe://"},
		{name: "client auth usage added is denied", spec: a(csrSpec{usages: append(usagesECDSA, certificatesv1.UsageClientAuth)}), reason: ReasonDisallowedUsages, inMsg: "client auth"},
		{name: "server auth missing is denied", spec: a(csrSpec{usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature}}), reason: ReasonDisallowedUsages},
		{name: "cert sign usage is denied", spec: a(csrSpec{usages: append(usagesECDSA, certificatesv1.UsageCertSign)}), reason: ReasonDisallowedUsages},
		{name: "key encipherment with an ECDSA key is denied", spec: a(csrSpec{usages: usagesRSA}), reason: ReasonDisallowedUsages, inMsg: "ECDSA"},
		{name: "CA:true basic constraints is denied", spec: a(csrSpec{exts: []pkix.Extension{basicConstraints(t, true)}}), reason: ReasonCARequested, inMsg: "CA:true"},
		{name: "basic constraints CA:false is denied too", spec: a(csrSpec{exts: []pkix.Extension{basicConstraints(t, false)}}), reason: ReasonCARequested},
		{name: "name constraints extension is denied", spec: a(csrSpec{exts: []pkix.Extension{{Id: oidNameConstraints, Value: []byte{0x30, 0x00}}}}), reason: ReasonCARequested},
		{name: "CN different from the username is denied", spec: a(csrSpec{cn: ptr("system:node:node-x")}), reason: ReasonSubjectMismatch, inMsg: "system:node:node-x"},
		{name: "O missing is denied", spec: a(csrSpec{noOrg: true}), reason: ReasonSubjectMismatch},
		{name: "O with an extra group is denied", spec: a(csrSpec{org: []string{nodesGroup, "system:masters"}}), reason: ReasonSubjectMismatch, inMsg: "system:masters"},
		{name: "O with another group is denied", spec: a(csrSpec{org: []string{"system:masters"}}), reason: ReasonSubjectMismatch},
		{name: "non-node requestor is denied", spec: a(csrSpec{username: ptr("alice"), cn: ptr("alice")}), reason: ReasonNotNodeRequestor, inMsg: "alice"},
		{name: "node user outside system:nodes is denied", spec: a(csrSpec{groups: []string{"system:authenticated"}}), reason: ReasonNotNodeRequestor},
		{name: "empty node name is denied", spec: a(csrSpec{username: ptr("system:node:"), cn: ptr("system:node:")}), reason: ReasonNotNodeRequestor},
		{name: "node A asking as node B is denied", spec: a(csrSpec{cn: ptr("system:node:node-b"), ips: []string{"10.0.0.11"}, dns: []string{"node-b"}}), reason: ReasonSubjectMismatch, inMsg: "node-b"},
		{name: "node A asking for node B's name is denied", spec: a(csrSpec{dns: []string{"node-b"}}), reason: ReasonDNSNameNotOfInstance, inMsg: "node-b"},
		{name: "DNS name with an unconfigured suffix is denied", spec: a(csrSpec{dns: []string{"node-a.evil.example"}}), reason: ReasonDNSNameNotOfInstance, inMsg: "node-a.evil.example"},
		{name: "RSA 1024 key is denied", spec: a(csrSpec{key: "rsa1024"}), reason: ReasonWeakKey, inMsg: "1024"},
		{name: "ECDSA P-224 key is denied", spec: a(csrSpec{key: "p224"}), reason: ReasonWeakKey, inMsg: "P-224"},
		{name: "expiration over the maximum is denied", spec: a(csrSpec{expiration: ptr(int32(72 * 3600))}), reason: ReasonExpirationTooLong, inMsg: "259200"},
		{name: "garbage PEM is denied", spec: a(csrSpec{raw: []byte("not a certificate request")}), reason: ReasonInvalidRequest},
		{name: "a PEM certificate instead of a request is denied", spec: a(csrSpec{raw: []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")}), reason: ReasonInvalidRequest},
		{name: "DER garbage inside PEM is denied", spec: a(csrSpec{raw: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte{0x30, 0x03, 0x02, 0x01}})}), reason: ReasonInvalidRequest},
		{name: "a request with a broken signature is denied", spec: a(csrSpec{raw: tamper(t, a(csrSpec{}))}), reason: ReasonInvalidRequest, inMsg: "signature"},
		{name: "no SANs at all is denied", spec: csrSpec{node: "node-a", ips: []string{}}, reason: ReasonNoIPSAN},
		{name: "DNS names without an IP are denied", spec: csrSpec{node: "node-a", ips: []string{}, dns: []string{"node-a"}}, reason: ReasonNoIPSAN},
		{name: "unknown node is denied", spec: a(csrSpec{node: "node-x"}), reason: ReasonInstanceNotFound, inMsg: `no instance named "node-x"`},
		{name: "unknown provider ID is denied", spec: a(csrSpec{}), nodes: []*corev1.Node{node("node-a", "openstack:///id-gone")}, reason: ReasonInstanceNotFound, inMsg: "openstack:///id-gone"},
		{name: "deleted server is denied", spec: csrSpec{node: "node-dead", ips: []string{"10.0.0.13"}}, reason: ReasonInstanceDeleted, inMsg: "id-dead"},
		{name: "ambiguous server name is left pending with a reason", spec: csrSpec{node: "twin", ips: []string{"10.0.0.14"}}, verdict: Wait, reason: ReasonInstanceAmbiguous, inMsg: `several instances are named "twin"`},
		{name: "node whose providerID points at another server is denied", spec: a(csrSpec{ips: []string{"10.0.0.11"}}), nodes: []*corev1.Node{node("node-a", "openstack:///id-b")}, reason: ReasonInstanceNameMismatch, inMsg: "id-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := withRegistered(tt.nodes, tt.spec.node)
			if tt.noNode {
				nodes = nodeGetter()
			}
			e := NewEvaluator(testCloud(), nodes, nil, testPolicy)
			d, err := e.Evaluate(context.Background(), makeCSR(t, tt.spec))
			if err != nil {
				t.Fatalf("Evaluate: unexpected error %v (a malformed request is a decision, not an error)", err)
			}
			want := tt.verdict
			if want == Continue {
				want = Deny
			}
			if d.Verdict != want || d.Reason != tt.reason {
				t.Fatalf("got %s/%s (%s), want %s/%s", d.Verdict, d.Reason, d.Message, want, tt.reason)
			}
			if !strings.Contains(d.Message, tt.inMsg) {
				t.Errorf("message %q does not name %q", d.Message, tt.inMsg)
			}
		})
	}
	if len(tests) < 25 {
		t.Fatalf("only %d malicious requests; the acceptance asks for at least 25", len(tests))
	}
}

func TestGoodRequestsAreApproved(t *testing.T) {
	tests := []struct {
		name  string
		spec  csrSpec
		nodes []*corev1.Node
		inMsg []string
		warns []string // the misconfigurations reported, each a part of one
	}{
		{name: "RSA 2048 with key encipherment is approved", spec: csrSpec{node: "node-a", key: "rsa2048", ips: []string{"10.0.0.10"}, dns: []string{"node-a"}}, inMsg: []string{"id-a", "10.0.0.10", `name "node-a"`}},
		{name: "ECDSA P-256 without key encipherment is approved", spec: csrSpec{node: "node-a", ips: []string{"10.0.0.10", "198.18.0.10"}}, inMsg: []string{"198.18.0.10"}},
		{name: "ECDSA P-384 is approved", spec: csrSpec{node: "node-a", key: "p384", ips: []string{"198.18.0.10"}}},
		{name: "Ed25519 is approved", spec: csrSpec{node: "node-a", key: "ed25519", ips: []string{"10.0.0.10"}}},
		{name: "RSA 2048 without key encipherment is approved", spec: csrSpec{node: "node-a", key: "rsa2048", usages: usagesECDSA, ips: []string{"10.0.0.10"}}},
		{name: "configured DNS suffix is approved", spec: csrSpec{node: "node-a", ips: []string{"10.0.0.10"}, dns: []string{"node-a.cluster.example", "NODE-A"}}},
		{name: "found by provider ID when the Node has one", spec: csrSpec{node: "node-a", ips: []string{"10.0.0.10"}}, nodes: []*corev1.Node{node("node-a", "openstack:///id-a")}, inMsg: []string{"provider ID openstack:///id-a"}},
		{name: "a Node without provider ID is found by name", spec: csrSpec{node: "node-a", ips: []string{"10.0.0.10"}}, nodes: []*corev1.Node{node("node-a", "")}, inMsg: []string{`name "node-a"`}},
		{name: "expiration within the maximum is approved", spec: csrSpec{node: "node-a", ips: []string{"10.0.0.10"}, expiration: ptr(int32(3600))}},
		{name: "node name in other case than the server name is approved", spec: csrSpec{node: "node-caps", ips: []string{"10.0.0.16"}, dns: []string{"Node-Caps"}}, nodes: []*corev1.Node{node("node-caps", "openstack:///id-Caps")}},
		{name: "a node named kubernetes-worker-1 gets its own name", spec: csrSpec{node: "kubernetes-worker-1", ips: []string{"10.0.0.18"}, dns: []string{"kubernetes-worker-1", "kubernetes-worker-1.cluster.example"}}},
		{name: "a control-plane host's own address is approved though listed as a control-plane endpoint", spec: csrSpec{node: "cp-1", ips: []string{"10.0.0.2"}, dns: []string{"cp-1"}}, inMsg: []string{"10.0.0.2"},
			warns: []string{"--control-plane-endpoint 10.0.0.2 is node cp-1's own address"}},
		{name: "FQDN node name with a configured suffix is approved", spec: csrSpec{node: "node-a.cluster.example", ips: []string{"10.0.0.10"}}, nodes: []*corev1.Node{node("node-a.cluster.example", "openstack:///id-a")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEvaluator(testCloud(), withRegistered(tt.nodes, tt.spec.node), nil, testPolicy)
			d, err := e.Evaluate(context.Background(), makeCSR(t, tt.spec))
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if d.Verdict != Approve || d.Reason != ReasonVerified {
				t.Fatalf("got %s/%s (%s), want approve/%s", d.Verdict, d.Reason, d.Message, ReasonVerified)
			}
			for _, want := range tt.inMsg {
				if !strings.Contains(d.Message, want) {
					t.Errorf("message %q does not say %q", d.Message, want)
				}
			}
			if len(d.Warnings) != len(tt.warns) {
				t.Fatalf("warnings %+v, want %d", d.Warnings, len(tt.warns))
			}
			for i, want := range tt.warns {
				if !strings.Contains(d.Warnings[i].Message, want) || d.Warnings[i].Reason != ReasonControlPlaneEndpointIsNodeAddress {
					t.Errorf("warning %+v does not say %q", d.Warnings[i], want)
				}
			}
		})
	}
}

func TestUndecidableRequestsAreLeftAlone(t *testing.T) {
	cloudDown := testCloud()
	cloudDown.err = errors.New("connection refused")
	failingNodes := func(context.Context, string) (*corev1.Node, error) { return nil, errors.New("apiserver timeout") }
	tests := []struct {
		name  string
		cloud *fakeCloud
		nodes NodeGetter
		spec  csrSpec
		want  string
	}{
		{name: "cloud error is no decision", cloud: cloudDown, spec: csrSpec{node: "node-a", ips: []string{"10.0.0.10"}}, want: "connection refused"},
		{name: "cloud error for an unknown node is no decision either", cloud: cloudDown, spec: csrSpec{node: "node-x", ips: []string{"10.0.0.10"}}, want: "connection refused"},
		{name: "apiserver error reading the Node is no decision", cloud: testCloud(), nodes: failingNodes, spec: csrSpec{node: "node-a", ips: []string{"10.0.0.10"}}, want: "apiserver timeout"},
		{name: "an address the cloud reports that is not an IP is no decision", cloud: testCloud(), spec: csrSpec{node: "node-bad", ips: []string{"10.0.0.66"}}, want: "not-an-ip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := tt.nodes
			if nodes == nil {
				nodes = registered
			}
			e := NewEvaluator(tt.cloud, nodes, nil, testPolicy)
			d, err := e.Evaluate(context.Background(), makeCSR(t, tt.spec))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got decision %s/%s and error %v, want an error containing %q", d.Verdict, d.Reason, err, tt.want)
			}
			if d.Verdict != Continue {
				t.Errorf("an error came with verdict %s", d.Verdict)
			}
		})
	}
}

func TestOtherSignersAreIgnored(t *testing.T) {
	cloud := testCloud()
	e := NewEvaluator(cloud, registered, nil, testPolicy)
	for _, signer := range []string{certificatesv1.KubeAPIServerClientKubeletSignerName, certificatesv1.KubeAPIServerClientSignerName, "example.com/anything"} {
		d, err := e.Evaluate(context.Background(), makeCSR(t, csrSpec{node: "node-a", signer: signer, ips: []string{"10.0.0.10"}}))
		if err != nil || d.Verdict != Ignore {
			t.Errorf("signer %s: got %s, %v; want ignore", signer, d.Verdict, err)
		}
	}
	if len(cloud.calls) != 0 {
		t.Errorf("the cloud was asked about other signers' requests: %v", cloud.calls)
	}
}

func TestExplainListsEveryCheckInOrder(t *testing.T) {
	e := NewEvaluator(testCloud(), registered, nil, testPolicy)
	steps, d, err := e.Explain(context.Background(), makeCSR(t, csrSpec{node: "node-a", ips: []string{"10.0.0.10"}}))
	if err != nil || d.Verdict != Approve {
		t.Fatalf("Explain: %s, %v", d.Verdict, err)
	}
	var names []string
	for _, s := range steps {
		names = append(names, s.Check)
	}
	want := "signer requestor usages subject-alt-names forbidden-ips extensions key expiration instance names subject-access-review"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("checks ran as %q, want %q", got, want)
	}
}

func manyIPs(n int) []string {
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, fmt.Sprintf("10.1.%d.%d", i/250, i%250+1))
	}
	return out
}

func deletingNode(name string) *corev1.Node {
	n := node(name, "openstack:///id-"+strings.TrimPrefix(name, "node-"))
	now := metav1.Now()
	n.DeletionTimestamp = &now
	return n
}

func TestTheDefaultMaxExpirationIsTheBuiltInSignersLifetime(t *testing.T) {
	policy := testPolicy
	policy.MaxExpiration = 0 // the flag's default
	e := NewEvaluator(testCloud(), registered, nil, policy)
	for _, tt := range []struct {
		name    string
		seconds int32
		verdict Verdict
	}{
		{"ten years is denied", 10 * 365 * 24 * 3600, Deny},
		{"a day over the signer's lifetime is denied", int32((DefaultMaxExpiration + 24*time.Hour) / time.Second), Deny},
		{"the signer's lifetime is approved", int32(DefaultMaxExpiration / time.Second), Approve},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := e.Evaluate(context.Background(), makeCSR(t, csrSpec{node: "node-a", ips: []string{"10.0.0.10"}, expiration: ptr(tt.seconds)}))
			if err != nil || d.Verdict != tt.verdict {
				t.Fatalf("got %s/%s (%s), %v; want %s", d.Verdict, d.Reason, d.Message, err, tt.verdict)
			}
			if tt.verdict == Deny && (d.Reason != ReasonExpirationTooLong || !strings.Contains(d.Message, "maximum "+DefaultMaxExpiration.String())) {
				t.Errorf("denial %s %q does not name the maximum %s", d.Reason, d.Message, DefaultMaxExpiration)
			}
		})
	}
}
