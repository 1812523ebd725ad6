package cloudsim

import (
	"fmt"
	"net/url"
	"strings"
)

// Booleans in query strings as the Python services parse them (oslo's
// bool_from_string, case-insensitive): Octavia's cascade, Nova's
// all_tenants, Neutron's boolean filters. The CLI sends "True".

var (
	trueStrings  = []string{"1", "t", "true", "on", "y", "yes"}
	falseStrings = []string{"0", "f", "false", "off", "n", "no"}
)

// parseBool returns the value of s, or an error naming the accepted
// values when s is neither.
func parseBool(s string) (bool, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	for _, t := range trueStrings {
		if v == t {
			return true, nil
		}
	}
	for _, f := range falseStrings {
		if v == f {
			return false, nil
		}
	}
	return false, fmt.Errorf("unrecognized value '%s', acceptable values are: '%s'", s,
		strings.Join(append(append([]string{}, falseStrings...), trueStrings...), "', '"))
}

// queryBool is a boolean query parameter: absent is false, present and
// empty is true (Nova's all_tenants), otherwise parseBool.
func queryBool(q url.Values, key string) (bool, error) {
	vals, ok := q[key]
	if !ok {
		return false, nil
	}
	if len(vals) == 0 || vals[0] == "" {
		return true, nil
	}
	return parseBool(vals[0])
}
