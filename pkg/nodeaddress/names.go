package nodeaddress

import "strings"

// NormalizeDNSSuffixes lower-cases the suffixes and trims their dots and
// spaces, dropping empty ones.
func NormalizeDNSSuffixes(in []string) []string {
	var out []string
	for _, s := range in {
		s = ASCIILower(strings.Trim(strings.TrimSpace(s), "."))
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// IsNodeNameOf is the binding of a Node to a server that both the approver
// and the CCM apply: the node's name is the server's name, or the server's
// name with one of the (normalized) DNS suffixes, for kubelets that use
// their FQDN as node name. ASCII case folding only. A kubelet writes its
// Node's providerID itself, so without this a node could claim another
// node's server: its addresses, certificates, zone and routes.
func IsNodeNameOf(nodeName, serverName string, suffixes []string) bool {
	n, s := ASCIILower(nodeName), ASCIILower(serverName)
	if n == s {
		return true
	}
	for _, suffix := range suffixes {
		if n == s+"."+suffix {
			return true
		}
	}
	return false
}

// ASCIILower folds A-Z only. strings.ToLower would also fold non-ASCII
// letters (U+212A KELVIN SIGN becomes k), letting a look-alike name bind to
// another server.
func ASCIILower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
