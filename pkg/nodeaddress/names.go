package nodeaddress

import "strings"

// NormalizeDNSSuffixes lower-cases the suffixes and trims their dots and
// spaces, dropping empty ones.
func NormalizeDNSSuffixes(in []string) []string {
	var out []string
	for _, s := range in {
		s = strings.ToLower(strings.Trim(strings.TrimSpace(s), "."))
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
	n, s := strings.ToLower(nodeName), strings.ToLower(serverName)
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
