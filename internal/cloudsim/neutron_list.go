package cloudsim

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Neutron's list semantics shared by every collection: any attribute can be
// a filter (repeated values are ORed), "fields" trims the response, and
// limit/marker pagination answers with <collection>_links.

var neutronNonFilters = map[string]bool{
	"all_tenants": true, "limit": true, "marker": true, "fields": true, "sort_key": true, "sort_dir": true, "page_reverse": true,
}

// neutronMatch reports whether a rendered resource passes the query filters.
func neutronMatch(item map[string]any, q url.Values) bool {
	for k, vals := range q {
		if neutronNonFilters[k] {
			continue
		}
		switch k {
		case "fixed_ips":
			if !matchFixedIPs(item["fixed_ips"], vals) {
				return false
			}
			continue
		case "security_groups":
			// Ports carrying any of the groups (port-security-groups-filtering).
			if !matchAnyOf(item["security_groups"], vals) {
				return false
			}
			continue
		case "tags", "tags-any", "not-tags", "not-tags-any":
			if !matchTags(item["tags"], k, vals) {
				return false
			}
			continue
		}
		v, ok := item[k]
		if !ok {
			continue // Neutron ignores unknown filters (or 400s); be lenient.
		}
		if !matchScalar(v, vals) {
			return false
		}
	}
	return true
}

func matchScalar(v any, vals []string) bool {
	var s string
	switch x := v.(type) {
	case nil:
		s = ""
	case string:
		s = x
	case bool:
		s = strconv.FormatBool(x)
	default:
		s = fmt.Sprint(x)
	}
	b, isBool := v.(bool)
	for _, want := range vals {
		if s == want {
			return true
		}
		if wb, err := parseBool(want); isBool && err == nil && wb == b {
			return true
		}
	}
	return false
}

// matchFixedIPs implements fixed_ips=ip_address=X / subnet_id=Y filters.
func matchFixedIPs(v any, vals []string) bool {
	ips, _ := v.([]any)
	for _, want := range vals {
		k, val, _ := strings.Cut(want, "=")
		found := false
		for _, ip := range ips {
			m, _ := ip.(map[string]any)
			switch k {
			case "ip_address", "subnet_id":
				found = found || m[k] == val
			case "ip_address_substr":
				s, _ := m["ip_address"].(string)
				found = found || strings.Contains(s, val)
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func matchAnyOf(v any, vals []string) bool {
	have, _ := v.([]string)
	for _, want := range vals {
		for _, h := range have {
			if h == want {
				return true
			}
		}
	}
	return false
}

func matchTags(v any, k string, vals []string) bool {
	have := map[string]bool{}
	switch t := v.(type) {
	case []string:
		for _, x := range t {
			have[x] = true
		}
	case []any:
		for _, x := range t {
			have[fmt.Sprint(x)] = true
		}
	}
	var want []string
	for _, v := range vals {
		want = append(want, strings.Split(v, ",")...)
	}
	all, anyOf := true, false
	for _, w := range want {
		if have[w] {
			anyOf = true
		} else {
			all = false
		}
	}
	switch k {
	case "tags":
		return all
	case "tags-any":
		return anyOf
	case "not-tags":
		return !all
	default:
		return !anyOf
	}
}

// writeFilteredList filters, pages and writes items as {collection: [...]},
// as Neutron and Octavia do; errors are in service's form.
func writeFilteredList(w http.ResponseWriter, r *http.Request, service, collection string, items []map[string]any) {
	q := r.URL.Query()
	limit := -1
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			writeErr(w, service, apiErr(http.StatusBadRequest, "BadRequest", "Bad limit request: %q is not an integer.", l))
			return
		}
		if n > 0 {
			limit = n
		}
	}
	marker := q.Get("marker")
	started := marker == ""
	fields := q["fields"]
	out := make([]any, 0)
	last := ""
	for _, it := range items {
		if !started {
			if it["id"] == marker {
				started = true
			}
			continue
		}
		if !neutronMatch(it, q) {
			continue
		}
		if limit >= 0 && len(out) == limit {
			break
		}
		out = append(out, trimFields(it, fields))
		last, _ = it["id"].(string)
	}
	body := map[string]any{collection: out}
	if service == ServiceLoadBalancer {
		body[collection+"_links"] = []any{} // Octavia always has it
	}
	// Both services link a next page whenever this one is full, even when
	// nothing follows (the client then reads an empty page), as the real
	// services do (checked by e2e/realcloud's fidelity test).
	if limit >= 0 && len(out) == limit {
		nq := url.Values{}
		for k, v := range q {
			nq[k] = v
		}
		if service == ServiceLoadBalancer {
			// Octavia's next link carries only limit and marker: the
			// filters of the first request are lost on later pages.
			nq = url.Values{"limit": {strconv.Itoa(limit)}}
		}
		nq.Set("marker", last)
		body[collection+"_links"] = []any{link(baseURL(r)+r.URL.Path+"?"+nq.Encode(), "next")}
	}
	writeJSON(w, http.StatusOK, body)
}

func trimFields(it map[string]any, fields []string) map[string]any {
	if len(fields) == 0 {
		return it
	}
	out := map[string]any{}
	for _, f := range fields {
		for _, ff := range strings.Split(f, ",") {
			if v, ok := it[ff]; ok {
				out[ff] = v
			}
		}
	}
	return out
}

// projectOf returns the token's project ID (empty for unscoped tokens).
func projectOf(r *http.Request) string {
	if t := tokenFrom(r); t != nil && t.Project != nil {
		return t.Project.ID
	}
	return ""
}
