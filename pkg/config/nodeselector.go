package config

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ParseNodeSelector reads a node selector as the upstream OpenStack CCM
// writes it ([LoadBalancer] node-selector and the Service annotation
// loadbalancer.openstack.org/node-selector): comma-separated "key=value"
// (the node has the label with that value) or "key" (the node has the
// label, any value). Empty means every node. Keys and values must be
// valid label keys and values, so a typo is reported instead of silently
// matching nothing.
func ParseNodeSelector(s string) (map[string]string, error) {
	out := map[string]string{}
	var bad []string
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, value, _ := strings.Cut(item, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			bad = append(bad, fmt.Sprintf("label key %q: %s", key, strings.Join(errs, "; ")))
			continue
		}
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			bad = append(bad, fmt.Sprintf("label value %q: %s", value, strings.Join(errs, "; ")))
			continue
		}
		out[key] = value
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(bad, ", "))
	}
	return out, nil
}

// MatchesNodeSelector reports whether labels satisfy every term of sel.
func MatchesNodeSelector(sel, labels map[string]string) bool {
	for k, v := range sel {
		have, ok := labels[k]
		if !ok || (v != "" && have != v) {
			return false
		}
	}
	return true
}

// nodeSelector is a cloud.conf key holding a node selector, checked where
// it is read so that the error names its line.
func nodeSelector(p *string) field {
	return field{set: func(v string, _ bool) error {
		if _, err := ParseNodeSelector(v); err != nil {
			return fmt.Errorf("invalid node selector %q: %w", v, err)
		}
		*p = v
		return nil
	}}
}
