//go:build e2e

package realcloud

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/openstack"
)

// The differential fidelity test reduces each answer to flat key → value
// observations in which everything that legitimately differs between two
// clouds (IDs, addresses, MACs, timestamps, endpoints) is replaced by a
// symbolic name or its kind, so what is left to differ is what our code
// could trip over.

var (
	uuidRE = regexp.MustCompile(`[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}`)
	macRE  = regexp.MustCompile(`^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$`)
	timeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d`)
	digit  = regexp.MustCompile(`\d`)
)

// namer gives the scenario's resources symbolic names (server-a, fip-a)
// so that values referring to them compare equal across clouds.
type namer struct{ names map[string]string }

func newNamer() *namer { return &namer{names: map[string]string{}} }

func (n *namer) add(raw, name string) {
	if raw != "" {
		n.names[raw] = name
		n.names[strings.ReplaceAll(raw, "-", "")] = name // Keystone's project IDs come without dashes
	}
}

// norm replaces a value by its symbolic name or its kind.
func (n *namer) norm(s string) string {
	if name, ok := n.names[s]; ok {
		return name
	}
	switch {
	case macRE.MatchString(s):
		return "<mac>"
	case timeRE.MatchString(s):
		return "<time:" + digit.ReplaceAllString(s, "9") + ">"
	}
	if ip := net.ParseIP(s); ip != nil {
		if ip.To4() != nil {
			return "<ipv4>"
		}
		return "<ipv6>"
	}
	// IDs inside a longer string (a port name, an error message).
	return uuidRE.ReplaceAllStringFunc(s, func(id string) string {
		if name, ok := n.names[id]; ok {
			return "<" + name + ">"
		}
		return "<uuid>"
	})
}

// obs is one step's observations.
type obs map[string]string

// flatten writes v under prefix, one key per leaf, values normalized.
func (o obs) flatten(n *namer, prefix string, v any) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			o[prefix] = "{}"
		}
		for k, e := range v {
			o.flatten(n, prefix+"."+k, e)
		}
	case []any:
		if len(v) == 0 {
			o[prefix] = "[]"
		}
		for i, e := range v {
			o.flatten(n, fmt.Sprintf("%s[%d]", prefix, i), e)
		}
	case string:
		o[prefix] = n.norm(v)
	case float64:
		o[prefix] = strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		o[prefix] = strconv.FormatBool(v)
	case nil:
		o[prefix] = "null"
	}
}

// fields records the listed fields (dotted paths into body, "" for a
// missing one) of a JSON document.
func (o obs) fields(n *namer, prefix string, body any, paths ...string) {
	for _, p := range paths {
		v, ok := at(body, p)
		if !ok {
			o[prefix+"."+p] = "<absent>"
			continue
		}
		o.flatten(n, prefix+"."+p, v)
	}
}

func at(body any, path string) (any, bool) {
	v := body
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func decode(body []byte) any {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return "<not JSON: " + strings.TrimSpace(string(body[:min(len(body), 80)])) + ">"
	}
	return v
}

// err records how our code classifies err: the door's sentinels first,
// then the HTTP status.
func (o obs) err(key string, err error) {
	var code gophercloud.ErrUnexpectedResponseCode
	switch {
	case err == nil:
		o[key] = "none"
	case errors.Is(err, openstack.ErrNotFound):
		o[key] = "ErrNotFound"
	case errors.Is(err, openstack.ErrConflict):
		o[key] = "ErrConflict"
	case errors.As(err, &code):
		o[key] = fmt.Sprintf("HTTP %d", code.Actual)
	default:
		o[key] = "other: " + err.Error()
	}
}

// errorBody records the shape of an error answer: its status, and each
// field's JSON type, except the few whose value names the kind of error.
func (o obs) errorBody(key string, ex framework.Exchange) {
	o[key+".status"] = strconv.Itoa(ex.Status)
	var shape []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(prefix+"."+k, e)
			}
		case string:
			last := prefix[strings.LastIndex(prefix, ".")+1:]
			if last == "type" || last == "faultcode" {
				shape = append(shape, prefix+"="+v)
			} else {
				shape = append(shape, prefix+":string")
			}
		case float64:
			shape = append(shape, prefix+"="+strconv.FormatFloat(v, 'f', -1, 64))
		case nil:
			shape = append(shape, prefix+":null")
		default:
			shape = append(shape, fmt.Sprintf("%s:%T", prefix, v))
		}
	}
	walk("", decode(ex.Body))
	slices.Sort(shape)
	o[key+".body"] = strings.Join(shape, " ")
}

// calls records each exchange as "METHOD path?query status", the path from
// the API's version on and IDs named, so the requests our code made and the
// codes it got compare across clouds with different endpoints. A run of
// GETs is sorted: pkg/openstack reads a load balancer's tree concurrently,
// so their order is the scheduler's, and reads change nothing.
func (o obs) calls(n *namer, key string, exs []framework.Exchange) {
	var lines []string
	run := 0 // where the current run of GETs starts in lines
	for _, ex := range exs {
		if ex.Method != "GET" {
			slices.Sort(lines[run:])
			run = len(lines) + 1
		}
		lines = append(lines, fmt.Sprintf("%s %s %d", ex.Method, apiPath(n, ex.URL), ex.Status))
	}
	slices.Sort(lines[min(run, len(lines)):])
	o[key] = strings.Join(lines, "; ")
}

// apiPath is a URL from its API version on (v2.1/, v2.0/, v2/, v3/), IDs
// and query values named.
func apiPath(n *namer, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	p := u.Path
	for _, v := range []string{"/v2.1/", "/v2.0/", "/v2/", "/v3/"} {
		if i := strings.LastIndex(p, v); i >= 0 {
			p = p[i+1:]
			break
		}
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = n.norm(s)
	}
	p = strings.Join(segs, "/")
	q := u.Query()
	if len(q) == 0 {
		return p
	}
	var parts []string
	for k, vs := range q {
		for _, v := range vs {
			parts = append(parts, k+"="+n.norm(v))
		}
	}
	slices.Sort(parts)
	return p + "?" + strings.Join(parts, "&")
}
