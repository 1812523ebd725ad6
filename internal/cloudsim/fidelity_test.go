package cloudsim

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Details real clients depend on: booleans as the Python services parse
// them, Nova's microversion negotiation and os-extra_specs, Glance, quotas,
// and a proxy's error without a request ID.

func TestBooleansParseLikeThePythonServices(t *testing.T) {
	sim, authURL := startSim(t, Options{Seed: rolesSeed()})
	c := login(t, authURL, "demo", "secret")
	subnet := sim.mustSubnet(t, "private")
	newLB := func() string {
		r := c.do("POST", "/load-balancer/v2/lbaas/loadbalancers", map[string]any{"loadbalancer": map[string]any{
			"vip_subnet_id": subnet, "listeners": []any{map[string]any{"protocol": "TCP", "protocol_port": 80}}}})
		var b struct {
			LB struct{ ID string } `json:"loadbalancer"`
		}
		if err := json.Unmarshal([]byte(r.body), &b); err != nil || r.code != 201 {
			t.Fatalf("create LB: %d %s", r.code, r.body)
		}
		waitSimLB(t, sim, b.LB.ID, "ACTIVE")
		return b.LB.ID
	}
	for _, v := range []string{"True", "1", "yes", "ON"} {
		id := newLB()
		if r := c.do("DELETE", "/load-balancer/v2/lbaas/loadbalancers/"+id+"?cascade="+v, nil); r.code != 204 {
			t.Errorf("cascade=%s: %d %s", v, r.code, r.body)
		}
	}
	id := newLB()
	for v, want := range map[string]string{"False": "it has children", "maybe": "unrecognized value 'maybe'"} {
		r := c.do("DELETE", "/load-balancer/v2/lbaas/loadbalancers/"+id+"?cascade="+v, nil)
		if r.code != 400 || !strings.Contains(r.body, want) {
			t.Errorf("cascade=%s: %d %s, want 400 saying %q", v, r.code, r.body, want)
		}
	}
	port := mustServerPort(t, sim, "demo-vm")
	if r := c.do("PUT", "/networking/v2.0/ports/"+port, map[string]any{"port": map[string]any{"admin_state_up": "False"}}); r.code != 200 || !strings.Contains(r.body, `"admin_state_up":false`) {
		t.Errorf("admin_state_up \"False\" in a body: %d %s", r.code, r.body)
	}
	if r := c.do("PUT", "/networking/v2.0/ports/"+port, map[string]any{"port": map[string]any{"admin_state_up": "maybe"}}); r.code != 400 {
		t.Errorf("admin_state_up \"maybe\" in a body: %d %s", r.code, r.body)
	}
	r := c.do("POST", "/load-balancer/v2/lbaas/loadbalancers", map[string]any{"loadbalancer": map[string]any{"vip_subnet_id": subnet, "admin_state_up": "0"}})
	if r.code != 201 || !strings.Contains(r.body, `"admin_state_up":false`) {
		t.Errorf("Octavia admin_state_up \"0\": %d %s", r.code, r.body)
	}
	if r := c.do("GET", "/networking/v2.0/networks?router:external=True", nil); !strings.Contains(r.body, `"public"`) || strings.Contains(r.body, `"private"`) {
		t.Errorf("router:external=True: %s", r.body)
	}
}

func mustServerPort(t *testing.T, sim *Sim, name string) string {
	t.Helper()
	sv, ok := sim.ServerByName(name)
	if !ok || len(sv.PortIDs) == 0 {
		t.Fatalf("server %s has no port", name)
	}
	return sv.PortIDs[0]
}

func waitSimLB(t *testing.T, sim *Sim, id, status string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		sim.mu.RLock()
		lb, ok := sim.state.lb.lbs.get(id)
		got := ""
		if ok {
			got = lb.Prov
		}
		sim.mu.RUnlock()
		if got == status {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("load balancer %s never became %s", id, status)
}

func TestNovaMicroversionHeaders(t *testing.T) {
	_, authURL := startSim(t, Options{Seed: rolesSeed()})
	c := login(t, authURL, "demo", "secret")
	for _, tc := range []struct {
		name    string
		headers http.Header
		code    int
		echo    string
	}{
		{"none is 2.1", nil, 200, "compute 2.1"},
		{"gophercloud's legacy header", http.Header{"X-Openstack-Nova-Api-Version": {"2.47"}}, 200, "compute 2.47"},
		{"the standard header wins over the legacy one", http.Header{"Openstack-Api-Version": {"compute 2.60"}, "X-Openstack-Nova-Api-Version": {"2.47"}}, 200, "compute 2.60"},
		{"latest is the maximum", http.Header{"Openstack-Api-Version": {"compute latest"}}, 200, "compute " + novaMaxMicroversion},
		{"another service's version is ignored", http.Header{"Openstack-Api-Version": {"volume 3.60, compute 2.53"}}, 200, "compute 2.53"},
		{"beyond the maximum is not acceptable", http.Header{"X-Openstack-Nova-Api-Version": {"2.200"}}, 406, ""},
		{"a malformed version is a bad request", http.Header{"X-Openstack-Nova-Api-Version": {"two"}}, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.extra = tc.headers
			r := c.do("GET", "/compute/v2.1/flavors", nil)
			if r.code != tc.code || r.header.Get("OpenStack-API-Version") != tc.echo {
				t.Fatalf("%d %q %s; want %d %q", r.code, r.header.Get("OpenStack-API-Version"), r.body, tc.code, tc.echo)
			}
		})
	}
}

func TestFlavorExtraSpecs(t *testing.T) {
	sd := rolesSeed()
	sd.Flavors[0].ExtraSpecs = map[string]string{"hw:cpu_policy": "dedicated"}
	_, authURL := startSim(t, Options{Seed: sd})
	c := login(t, authURL, "viewer", "viewer-secret")
	if r := c.do("GET", "/compute/v2.1/flavors/1/os-extra_specs", nil); r.code != 200 || !strings.Contains(r.body, `{"extra_specs":{"hw:cpu_policy":"dedicated"}}`) {
		t.Errorf("extra specs of flavor 1: %d %s", r.code, r.body)
	}
	if r := c.do("GET", "/compute/v2.1/flavors/2/os-extra_specs", nil); r.code != 200 || !strings.Contains(r.body, `{"extra_specs":{}}`) {
		t.Errorf("extra specs of flavor 2: %d %s", r.code, r.body)
	}
	if r := c.do("GET", "/compute/v2.1/flavors/1/os-extra_specs/hw:cpu_policy", nil); r.code != 200 || !strings.Contains(r.body, `"dedicated"`) {
		t.Errorf("one key: %d %s", r.code, r.body)
	}
	if r := c.do("GET", "/compute/v2.1/flavors/9/os-extra_specs", nil); r.code != 404 || !strings.Contains(r.body, "itemNotFound") {
		t.Errorf("missing flavor: %d %s", r.code, r.body)
	}
}

func TestGlanceServesTheImagesServersBootFrom(t *testing.T) {
	sd := rolesSeed()
	sd.Images = append(sd.Images, SeedImage{Name: "ops-private", Project: "ops", Visibility: "private"}, SeedImage{Name: "ubuntu"})
	sim, authURL := startSim(t, Options{Seed: sd})
	c := login(t, authURL, "viewer", "viewer-secret")
	r := c.do("GET", "/image/v2/images?limit=1", nil)
	var page struct {
		Images []struct{ ID, Name, Status string }
		Next   string
	}
	if err := json.Unmarshal([]byte(r.body), &page); err != nil || r.code != 200 || len(page.Images) != 1 || page.Images[0].Name != "debian-12" || !strings.HasPrefix(page.Next, "/v2/images?") {
		t.Fatalf("first page: %d %s", r.code, r.body)
	}
	r = c.do("GET", "/image"+page.Next, nil)
	if !strings.Contains(r.body, "ubuntu") || strings.Contains(r.body, "ops-private") || strings.Contains(r.body, `"next"`) {
		t.Fatalf("second page (another project's private image must not show): %s", r.body)
	}
	vm, _ := sim.ServerByName("demo-vm")
	sv := c.do("GET", "/compute/v2.1/servers/"+vm.ID, nil).body
	img := c.do("GET", "/image/v2/images/"+page.Images[0].ID, nil)
	if img.code != 200 || !strings.Contains(sv, page.Images[0].ID) || !strings.Contains(img.body, `"status":"active"`) {
		t.Fatalf("server %s\nimage %d %s", sv, img.code, img.body)
	}
	if r := c.do("GET", "/image/v2/images/00000000-0000-0000-0000-000000000000", nil); r.code != 404 || !strings.Contains(r.body, "No image found") {
		t.Fatalf("missing image: %d %s", r.code, r.body)
	}
	if r := c.do("GET", "/image", nil); r.code != 300 || !strings.Contains(r.body, `"CURRENT"`) {
		t.Fatalf("version document: %d %s", r.code, r.body)
	}
}

func TestQuotasShowLimitsAndUse(t *testing.T) {
	sim, authURL := startSim(t, Options{Seed: rolesSeed()})
	c := login(t, authURL, "demo", "secret")
	vm, _ := sim.ServerByName("demo-vm")
	sv, _ := sim.GetServer(vm.ID)
	r := c.do("GET", "/compute/v2.1/os-quota-sets/"+sv.ProjectID+"/detail", nil)
	if r.code != 200 || !strings.Contains(r.body, `"instances":{"in_use":1,"limit":10,"reserved":0}`) {
		t.Errorf("nova quota detail: %d %s", r.code, r.body)
	}
	opsVM, _ := sim.GetServer(mustServerID(t, sim, "ops-vm"))
	if r := c.do("GET", "/networking/v2.0/quotas/"+opsVM.ProjectID, nil); r.code != 403 {
		t.Errorf("another project's quota: %d %s", r.code, r.body)
	}
}

func mustServerID(t *testing.T, sim *Sim, name string) string {
	t.Helper()
	sv, ok := sim.ServerByName(name)
	if !ok {
		t.Fatalf("no server %s", name)
	}
	return sv.ID
}

func TestAProxyErrorCarriesNoRequestID(t *testing.T) {
	sim, authURL := startSim(t, Options{Seed: rolesSeed()})
	c := login(t, authURL, "demo", "secret")
	if err := sim.SetFault(FaultRule{Service: ServiceCompute, Operation: "servers.get", Status: 404, NoRequestID: true, Times: 1}); err != nil {
		t.Fatal(err)
	}
	path := "/compute/v2.1/servers/" + mustServerID(t, sim, "demo-vm")
	r := c.do("GET", path, nil)
	if r.code != 404 || r.header.Get("X-Openstack-Request-Id") != "" || strings.Contains(r.body, "itemNotFound") {
		t.Fatalf("proxy 404: %d %v %s", r.code, r.header, r.body)
	}
	if r := c.do("GET", path, nil); r.code != 200 || r.header.Get("X-Openstack-Request-Id") == "" {
		t.Fatalf("after the fault: %d %v", r.code, r.header)
	}
}
