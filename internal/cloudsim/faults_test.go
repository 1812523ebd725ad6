package cloudsim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestFaultInjection(t *testing.T) {
	tests := []struct {
		name  string
		rule  FaultRule
		calls int
		// wantCodes is the status per call (0 = success).
		wantCodes []int
		minTime   time.Duration
	}{
		{name: "a 503 rule fails every matching call", rule: FaultRule{Service: "compute", Operation: "flavors.get", Status: 503},
			calls: 2, wantCodes: []int{503, 503}},
		{name: "a rule for another operation leaves calls alone", rule: FaultRule{Service: "compute", Operation: "servers.detail", Status: 500},
			calls: 1, wantCodes: []int{0}},
		{name: "a wildcard operation matches", rule: FaultRule{Service: "compute", Operation: "*", Status: 500},
			calls: 1, wantCodes: []int{500}},
		{name: "Times limits a rule to the first calls", rule: FaultRule{Service: "compute", Status: 500, Times: 1},
			calls: 3, wantCodes: []int{500, 0, 0}},
		{name: "latency delays calls without failing them", rule: FaultRule{Service: "compute", Latency: 150 * time.Millisecond},
			calls: 1, wantCodes: []int{0}, minTime: 150 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim, authURL := startSim(t, Options{})
			compute := computeClient(t, authURL)
			if err := sim.SetFault(tt.rule); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			for i := 0; i < tt.calls; i++ {
				_, err := flavors.Get(ctxT(t), compute, "1").Extract()
				if tt.wantCodes[i] == 0 {
					if err != nil {
						t.Fatalf("call %d: %v", i, err)
					}
				} else if !gophercloud.ResponseCodeIs(err, tt.wantCodes[i]) {
					t.Fatalf("call %d: want %d, got %v", i, tt.wantCodes[i], err)
				}
			}
			if el := time.Since(start); el < tt.minTime {
				t.Fatalf("calls took %v, want at least %v", el, tt.minTime)
			}
		})
	}
}

// A Drop rule answers nothing: the client gets a transport error (as from
// a neutron-server killed under its request), no HTTP status, and the
// next call, past the rule's Times, is served. Go's transport sends an
// idempotent request again, once, when a reused connection closes
// unanswered: a GET meets the rule twice.
func TestADropFaultClosesTheConnectionUnanswered(t *testing.T) {
	sim, authURL := startSim(t, Options{})
	compute := computeClient(t, authURL)
	if err := sim.SetFault(FaultRule{Service: "compute", Operation: "flavors.get", Drop: true, Status: 503, Times: 2}); err != nil {
		t.Fatal(err)
	}
	_, err := flavors.Get(ctxT(t), compute, "1").Extract()
	var code gophercloud.ErrUnexpectedResponseCode
	if err == nil || errors.As(err, &code) {
		t.Fatalf("dropped call: %v, want a transport error without a status", err)
	}
	if _, err := flavors.Get(ctxT(t), compute, "1").Extract(); err != nil {
		t.Fatalf("the call after the drop: %v", err)
	}
	if got := sim.FaultUses(); len(got) != 1 || got[0] != 2 {
		t.Errorf("fault uses %v, want [2]", got)
	}
}

func TestRateLimitHangAndErrorRate(t *testing.T) {
	sim, authURL := startSim(t, Options{RandSeed: 42})
	compute := computeClient(t, authURL)

	t.Run("a 429 carries Retry-After in seconds", func(t *testing.T) {
		_ = sim.SetFault(FaultRule{Service: "compute", Operation: "flavors.get", Status: 429, RetryAfter: 2 * time.Second, Times: 1})
		_, err := flavors.Get(ctxT(t), compute, "1").Extract()
		var ue gophercloud.ErrUnexpectedResponseCode
		if !errors.As(err, &ue) || ue.Actual != 429 || ue.ResponseHeader.Get("Retry-After") != "2" {
			t.Fatalf("want a 429 with Retry-After 2, got %v", err)
		}
	})
	t.Run("a hung call ends when the client gives up", func(t *testing.T) {
		sim.ClearFaults()
		_ = sim.SetFault(FaultRule{Service: "compute", Operation: "servers.get", Hang: true})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := servers.Get(ctx, compute, "x").Extract()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("want a deadline error, got %v", err)
		}
	})
	t.Run("an error rate fails a fraction of calls", func(t *testing.T) {
		sim.ClearFaults()
		_ = sim.SetFault(FaultRule{Service: "compute", Operation: "flavors.get", Status: 500, ErrorRate: 0.5})
		failed := 0
		for i := 0; i < 100; i++ {
			if _, err := flavors.Get(ctxT(t), compute, "1").Extract(); err != nil {
				failed++
			}
		}
		if failed < 25 || failed > 75 {
			t.Fatalf("%d of 100 calls failed with rate 0.5", failed)
		}
	})
	t.Run("failed calls are counted by code in Prometheus", func(t *testing.T) {
		got := testutil.ToFloat64(sim.metrics.WithLabelValues("compute", "flavors.get", "500"))
		if got < 25 {
			t.Fatalf("stackward_cloudsim_requests_total{code=500} = %v", got)
		}
		if sim.Calls()["compute.flavors.get"] < 101 {
			t.Fatalf("calls = %v", sim.Calls())
		}
	})
}

func TestAdminAPI(t *testing.T) {
	sim, authURL := startSim(t, Options{})
	base := strings.TrimSuffix(authURL, "/v3")
	do := func(method, path, body string, want int) map[string]any {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctxT(t), method, base+path, bytes.NewBufferString(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: status %d, want %d: %v", method, path, resp.StatusCode, want, out)
		}
		return out
	}
	created := do("POST", "/admin/servers", `{"name":"web-1","flavor":"m1.large","nics":[{"network":"private","fixedIP":"10.0.0.50"}]}`, 201)
	id, _ := created["ID"].(string)
	steps := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"a server created through the admin API is served by Nova", func(t *testing.T) {
			s, err := servers.Get(ctxT(t), computeClient(t, authURL), id).Extract()
			if err != nil || s.Name != "web-1" {
				t.Fatalf("server = %+v, %v", s, err)
			}
		}},
		{"shutoff changes the Nova status", func(t *testing.T) {
			do("POST", "/admin/servers/"+id+"/shutoff", "", 200)
			if s, _ := sim.GetServer(id); s.Status != "SHUTOFF" {
				t.Fatalf("status %q", s.Status)
			}
		}},
		{"a floating IP can be attached and detached", func(t *testing.T) {
			ip := do("POST", "/admin/servers/"+id+"/floating-ips", `{"network":"public"}`, 201)["ip"].(string)
			if s, _ := sim.GetServer(id); len(s.Addresses) != 2 {
				t.Fatalf("addresses after attach: %+v", s.Addresses)
			}
			do("DELETE", "/admin/servers/"+id+"/floating-ips/"+ip, "", 204)
			if s, _ := sim.GetServer(id); len(s.Addresses) != 1 {
				t.Fatalf("addresses after detach: %+v", s.Addresses)
			}
		}},
		{"a second NIC adds an address on that network", func(t *testing.T) {
			do("POST", "/admin/servers/"+id+"/nics", `{"network":"public"}`, 201)
			if s, _ := sim.GetServer(id); len(s.Addresses) != 2 || s.Addresses[1].Network != "public" {
				t.Fatalf("addresses: %+v", s.Addresses)
			}
		}},
		{"faults set through the admin API apply", func(t *testing.T) {
			do("POST", "/admin/faults", `{"service":"compute","operation":"servers.get","status":503,"latency":"1ms"}`, 201)
			_, err := servers.Get(ctxT(t), computeClient(t, authURL), id).Extract()
			if !gophercloud.ResponseCodeIs(err, 503) {
				t.Fatalf("want 503, got %v", err)
			}
			do("DELETE", "/admin/faults", "", 204)
		}},
		{"a bounded provisioning hang round-trips with its duration", func(t *testing.T) {
			do("POST", "/admin/faults", `{"service":"load-balancer","operation":"provisioning","hang":true,"hangFor":"30s","status":500}`, 201)
			got := do("GET", "/admin/faults", "", 200)["faults"].([]any)
			if len(got) != 1 || got[0].(map[string]any)["hangFor"] != "30s" {
				t.Fatalf("faults = %v", got)
			}
			if r := sim.Faults(); len(r) != 1 || r[0].HangFor != 30*time.Second {
				t.Fatalf("rules = %+v", r)
			}
			do("DELETE", "/admin/faults", "", 204)
			do("POST", "/admin/faults", `{"service":"load-balancer","operation":"provisioning","hangFor":"30s"}`, 400)
		}},
		{"counters are served", func(t *testing.T) {
			calls := do("GET", "/admin/calls", "", 200)["calls"].(map[string]any)
			if calls["compute.servers.get"].(float64) < 2 {
				t.Fatalf("calls = %v", calls)
			}
		}},
		{"a deleted server is gone", func(t *testing.T) {
			do("DELETE", "/admin/servers/"+id, "", 204)
			do("GET", "/admin/servers/"+id, "", 404)
		}},
		{"a bad spec is a 400 naming the field", func(t *testing.T) {
			out := do("POST", "/admin/servers", `{"name":"x","flavor":"huge"}`, 400)
			if !strings.Contains(out["error"].(string), "flavor") {
				t.Fatalf("error = %v", out)
			}
		}},
	}
	for _, st := range steps {
		t.Run(st.name, st.check)
	}
}
