package approver

import (
	"context"
	"encoding/pem"
	"net/netip"
	"slices"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// FuzzCheckCSR feeds arbitrary requests (PEM as is, or DER wrapped in a
// PEM block), requestors and usages through every check. Nothing may
// panic, and an approval must keep the approver's promise: the subject is
// the requestor and every IP SAN is an address of the requestor's instance.
func FuzzCheckCSR(f *testing.F) {
	add := func(s csrSpec, usages string) {
		p := csrPEM(f, s)
		block, _ := pem.Decode(p)
		f.Add(p, false, nodeUserPrefix+s.node, usages)
		f.Add(block.Bytes, true, nodeUserPrefix+s.node, usages)
	}
	add(csrSpec{node: "node-a", ips: []string{"10.0.0.10"}, dns: []string{"node-a"}}, "digital signature,server auth")
	add(csrSpec{node: "node-a", key: "rsa2048", ips: []string{"198.18.0.10"}}, "digital signature,key encipherment,server auth")
	add(csrSpec{node: "node-a", key: "ed25519", ips: []string{"10.0.0.11"}, dns: []string{"*.x", "kubernetes"}}, "digital signature,server auth,client auth")
	add(csrSpec{node: "node-b", ips: []string{"10.0.0.11"}, emails: []string{"a@b"}, uris: []string{"spiffe://x"}}, "digital signature,server auth")
	add(csrSpec{node: "twin", ips: []string{"10.0.0.14"}}, "digital signature,server auth")
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nMAA=\n-----END CERTIFICATE REQUEST-----\n"), false, "system:node:node-a", "server auth")
	f.Add([]byte{0x30, 0x82, 0xff, 0xff}, true, "system:node:", "")
	f.Add([]byte(""), false, "alice", "digital signature")

	cloud := testCloud()
	e := NewEvaluator(cloud, nodeGetter(node("node-b", "openstack:///id-b")), nil, testPolicy)
	f.Fuzz(func(t *testing.T, data []byte, wrap bool, username, usages string) {
		if wrap {
			data = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: data})
		}
		csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    data,
			SignerName: certificatesv1.KubeletServingSignerName,
			Username:   username,
			Groups:     []string{nodesGroup},
		}}
		for _, u := range strings.Split(usages, ",") {
			csr.Spec.Usages = append(csr.Spec.Usages, certificatesv1.KeyUsage(u))
		}
		d, err := e.Evaluate(context.Background(), csr)
		if err != nil || d.Verdict != Approve {
			return
		}
		cr, perr := parseCSR(data)
		if perr != nil {
			t.Fatalf("approved a request that does not parse: %v", perr)
		}
		if cr.Subject.CommonName != username || len(cr.IPAddresses) == 0 {
			t.Fatalf("approved CN %q for %q with IPs %v", cr.Subject.CommonName, username, cr.IPAddresses)
		}
		name := strings.TrimPrefix(username, nodeUserPrefix)
		var owned []netip.Addr
		for _, s := range cloud.servers {
			if strings.EqualFold(s.Name, name) {
				for _, a := range s.Addresses["private"] {
					owned = append(owned, netip.MustParseAddr(a.Addr))
				}
			}
		}
		for _, ip := range cr.IPAddresses {
			a, _ := netip.AddrFromSlice(ip)
			if !slices.Contains(owned, a.Unmap()) {
				t.Fatalf("approved IP %s for %s, which owns %v", ip, name, owned)
			}
		}
	})
}
