package openstack

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeCloud is a minimal Keystone v3 + Nova + Neutron over httptest, enough
// to exercise the gophercloud adapters: tokens with a catalog, servers (one
// GET, a paginated servers/detail), flavors and ports. It counts requests
// by "METHOD path" and can answer queued failures.
type fakeCloud struct {
	t   *testing.T
	srv *httptest.Server

	mu          sync.Mutex
	servers     []map[string]any
	flavors     map[string]string // id → name
	ports       []map[string]any
	pageSize    int
	tokens      map[string]bool // valid tokens
	issued      int
	authBodies  []map[string]any
	requests    map[string]int
	faults      map[string][]int // "METHOD path" → status codes to answer next
	microversns []string
	userAgents  []string
	listQueries []string
}

func newFakeCloud(t *testing.T) *fakeCloud {
	f := &fakeCloud{t: t, flavors: map[string]string{}, tokens: map[string]bool{}, requests: map[string]int{}, faults: map[string][]int{}, pageSize: 1000}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// newFakeCloudTLS is a fakeCloud on HTTPS with its own CA.
func newFakeCloudTLS(t *testing.T) *fakeCloud {
	f := &fakeCloud{t: t, flavors: map[string]string{}, tokens: map[string]bool{}, requests: map[string]int{}, faults: map[string][]int{}, pageSize: 1000}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeCloud) authURL() string { return f.srv.URL + "/v3" }

func (f *fakeCloud) fail(method, path string, codes ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := method + " " + path
	f.faults[key] = append(f.faults[key], codes...)
}

func (f *fakeCloud) count(method, path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[method+" "+path]
}

// expireTokens makes every issued token invalid, as Keystone does when
// tokens expire.
func (f *fakeCloud) expireTokens() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens = map[string]bool{}
}

func (f *fakeCloud) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	key := r.Method + " " + r.URL.Path
	f.requests[key]++
	var code int
	if q := f.faults[key]; len(q) > 0 {
		code, f.faults[key] = q[0], q[1:]
	}
	f.mu.Unlock()
	if code != 0 {
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		http.Error(w, `{"error": "injected"}`, code)
		return
	}
	if key == "POST /v3/auth/tokens" {
		f.issueToken(w, r)
		return
	}
	f.mu.Lock()
	valid := f.tokens[r.Header.Get("X-Auth-Token")]
	f.mu.Unlock()
	if !valid {
		http.Error(w, `{"error": {"code": 401, "message": "The request you have made requires authentication."}}`, http.StatusUnauthorized)
		return
	}
	switch {
	case strings.HasPrefix(r.URL.Path, "/compute/v2.1/"):
		f.mu.Lock()
		f.microversns = append(f.microversns, r.Header.Get("X-OpenStack-Nova-API-Version"))
		f.userAgents = append(f.userAgents, r.Header.Get("User-Agent"))
		f.mu.Unlock()
		f.compute(w, r, strings.TrimPrefix(r.URL.Path, "/compute/v2.1/"))
	case r.URL.Path == "/network/v2.0/ports":
		f.listPorts(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeCloud) issueToken(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	data, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(data, &body); err != nil {
		http.Error(w, "bad JSON", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.issued++
	tok := fmt.Sprintf("tok-%d", f.issued)
	f.tokens[tok] = true
	f.authBodies = append(f.authBodies, body)
	f.mu.Unlock()
	endpoint := func(typ, url string) map[string]any {
		return map[string]any{"type": typ, "name": typ, "endpoints": []any{
			map[string]any{"interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": url},
		}}
	}
	w.Header().Set("X-Subject-Token", tok)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"token": map[string]any{
		"expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		"catalog": []any{
			endpoint("compute", f.srv.URL+"/compute/v2.1/"),
			endpoint("network", f.srv.URL+"/network/"),
		},
	}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeCloud) compute(w http.ResponseWriter, r *http.Request, path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case path == "servers/detail":
		f.listQueries = append(f.listQueries, r.URL.RawQuery)
		start := 0
		if marker := r.URL.Query().Get("marker"); marker != "" {
			for i, s := range f.servers {
				if s["id"] == marker {
					start = i + 1
				}
			}
		}
		end := min(start+f.pageSize, len(f.servers))
		page := map[string]any{"servers": f.servers[start:end]}
		if end < len(f.servers) {
			next := fmt.Sprintf("%s/compute/v2.1/servers/detail?marker=%s", f.srv.URL, f.servers[end-1]["id"])
			page["servers_links"] = []any{map[string]any{"rel": "next", "href": next}}
		}
		writeJSON(w, page)
	case strings.HasPrefix(path, "servers/"):
		id := strings.TrimPrefix(path, "servers/")
		if id == "answered-by-a-proxy" {
			// 200 and JSON, but not Nova's: no "server" in it.
			writeJSON(w, map[string]any{})
			return
		}
		for _, s := range f.servers {
			if s["id"] == id {
				writeJSON(w, map[string]any{"server": s})
				return
			}
		}
		http.Error(w, `{"itemNotFound": {"code": 404, "message": "Instance could not be found."}}`, http.StatusNotFound)
	case strings.HasPrefix(path, "flavors/"):
		id := strings.TrimPrefix(path, "flavors/")
		if name, ok := f.flavors[id]; ok {
			writeJSON(w, map[string]any{"flavor": map[string]any{"id": id, "name": name}})
			return
		}
		http.Error(w, `{"itemNotFound": {"code": 404}}`, http.StatusNotFound)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeCloud) listPorts(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	device := r.URL.Query().Get("device_id")
	out := []map[string]any{}
	for _, p := range f.ports {
		if device == "" || p["device_id"] == device {
			out = append(out, p)
		}
	}
	writeJSON(w, map[string]any{"ports": out})
}

// novaServerJSON is a server as Nova 2.47 returns it.
func novaServerJSON(id, name, status string) map[string]any {
	return map[string]any{
		"id": id, "name": name, "status": status, "tenant_id": "proj-1",
		"OS-EXT-AZ:availability_zone": "az-1",
		"OS-SRV-USG:launched_at":      "2026-01-02T03:04:05.000000",
		"accessIPv4":                  "", "accessIPv6": "",
		"metadata": map[string]string{"role": "worker"},
		"flavor":   map[string]any{"original_name": "m1.large", "vcpus": 4, "ram": 8192},
		"addresses": map[string]any{
			"private": []any{
				map[string]any{"addr": "10.0.0.5", "version": 4, "OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:00:00:01"},
				map[string]any{"addr": "203.0.113.5", "version": 4, "OS-EXT-IPS:type": "floating", "OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:00:00:01"},
			},
		},
	}
}
