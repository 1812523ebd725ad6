package provider

import "strings"

// maxLabelValueLength is the longest value Kubernetes accepts for a label.
const maxLabelValueLength = 63

// sanitizeLabelValue turns a cloud-supplied name (a flavor, an availability
// zone) into a valid label value, because the cloud-node controller copies
// InstanceType and Zone into node.kubernetes.io/instance-type and
// topology.kubernetes.io/zone, and an invalid value makes the whole Node
// update fail, which would leave the node uninitialized forever.
//
// Characters outside [A-Za-z0-9._-] become '-', the value is cut to 63
// characters and must start and end with an alphanumeric character. A value
// with nothing usable becomes "" (the label is then not set), never a made-up
// name. Distinct names may map to one value ("a/b" and "a-b"): a label is a
// selector, not an identifier.
func sanitizeLabelValue(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.TrimFunc(b.String(), notAlphanumeric)
	if len(out) > maxLabelValueLength {
		out = strings.TrimRightFunc(out[:maxLabelValueLength], notAlphanumeric)
	}
	return out
}

func notAlphanumeric(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
}
