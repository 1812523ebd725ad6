package cloudsim

import (
	"encoding/json"
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

// flexBool is a boolean in a request body as Neutron and Octavia accept
// it: a JSON boolean, or a string parseBool knows ("True", "1", "yes").
type flexBool bool

func (b *flexBool) UnmarshalJSON(data []byte) error {
	var v bool
	if err := json.Unmarshal(data, &v); err == nil {
		*b = flexBool(v)
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%s is not a boolean", data)
	}
	v, err := parseBool(s)
	if err != nil {
		return err
	}
	*b = flexBool(v)
	return nil
}

// setBool copies a boolean the request carried.
func setBool(dst *bool, src *flexBool) {
	if src != nil {
		*dst = bool(*src)
	}
}
