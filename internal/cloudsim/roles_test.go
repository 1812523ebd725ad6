package cloudsim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// rolesSeed is the default cloud with a second project that owns a server
// and an external network, so that scoping across projects shows.
func rolesSeed() *Seed {
	sd := DefaultSeed()
	sd.Projects = append(sd.Projects, SeedProject{Name: "ops"})
	sd.Users = append(sd.Users, SeedUser{Name: "ops", Password: "ops-secret", Project: "ops"})
	sd.ApplicationCredentials = []SeedAppCred{
		{ID: "ac-ro", Name: "approver", Secret: "ro-secret", User: "demo", Roles: []string{RoleReader}},
		{ID: "ac-rw", Name: "ccm", Secret: "rw-secret", User: "demo"},
	}
	sd.Networks = append(sd.Networks, SeedNetwork{Name: "ops-public", Project: "ops", External: true,
		Subnets: []SeedSubnet{{CIDR: "198.51.100.0/24"}}},
		SeedNetwork{Name: "ops-private", Project: "ops", Subnets: []SeedSubnet{{CIDR: "192.168.77.0/24"}}})
	sd.Servers = []ServerSpec{
		{Name: "demo-vm", Project: "demo", NICs: []NICSpec{{Network: "private"}}},
		{Name: "ops-vm", Project: "ops", NICs: []NICSpec{{Network: "private"}}},
	}
	return sd
}

type apiClient struct {
	t     *testing.T
	base  string
	token string
	extra http.Header
}

type apiReply struct {
	code   int
	header http.Header
	body   string
}

// login gets a project-scoped token by password (or application
// credential when user is "appcred:<id>").
func login(t *testing.T, authURL, user, password string) *apiClient {
	t.Helper()
	body := map[string]any{"auth": map[string]any{"identity": map[string]any{"methods": []string{"password"},
		"password": map[string]any{"user": map[string]any{"name": user, "password": password, "domain": map[string]any{"name": "Default"}}}}}}
	if id, ok := strings.CutPrefix(user, "appcred:"); ok {
		body = map[string]any{"auth": map[string]any{"identity": map[string]any{"methods": []string{"application_credential"},
			"application_credential": map[string]any{"id": id, "secret": password}}}}
	}
	c := &apiClient{t: t, base: strings.TrimSuffix(authURL, "/v3")}
	r := c.do("POST", "/v3/auth/tokens", body)
	if r.code != http.StatusCreated {
		t.Fatalf("login %s: %d %s", user, r.code, r.body)
	}
	c.token = r.header.Get("X-Subject-Token")
	return c
}

func (c *apiClient) do(method, path string, body any) apiReply {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(ctxT(c.t), method, c.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("X-Auth-Token", c.token)
	}
	for k, v := range c.extra {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return apiReply{code: resp.StatusCode, header: resp.Header, body: string(b)}
}

// TestRolesDecideWhatEachTokenMayDo runs the same operations as reader,
// member and admin (and Octavia's observer) and checks each service's answer.
func TestRolesDecideWhatEachTokenMayDo(t *testing.T) {
	sim, authURL := startSim(t, Options{Seed: rolesSeed()})
	demoVM, _ := sim.ServerByName("demo-vm")
	ops := login(t, authURL, "ops", "ops-secret")
	var opsNet struct {
		Networks []struct{ ID string } `json:"networks"`
	}
	if err := json.Unmarshal([]byte(ops.do("GET", "/networking/v2.0/networks?name=ops-public", nil).body), &opsNet); err != nil || len(opsNet.Networks) != 1 {
		t.Fatalf("ops-public: %v %+v", err, opsNet)
	}
	subnet := sim.mustSubnet(t, "private")
	var public struct {
		Networks []struct{ ID string } `json:"networks"`
	}
	if err := json.Unmarshal([]byte(ops.do("GET", "/networking/v2.0/networks?name=public", nil).body), &public); err != nil || len(public.Networks) != 1 {
		t.Fatalf("public: %v %+v", err, public)
	}
	lbBody := map[string]any{"loadbalancer": map[string]any{"name": "lb", "vip_subnet_id": subnet}}
	stop := map[string]any{"os-stop": nil}

	type check struct {
		name, method, path string
		body               any
		want               map[string]int // by user
		forbidden          string         // the 403 body must contain this
	}
	checks := []check{
		{name: "Nova: servers are listed by reader, member and admin, not by an Octavia-only role",
			method: "GET", path: "/compute/v2.1/servers/detail",
			want:      map[string]int{"viewer": 200, "demo": 200, "admin": 200, "lb-observer": 403},
			forbidden: `"forbidden"`},
		{name: "Nova: all_tenants needs admin",
			method: "GET", path: "/compute/v2.1/servers/detail?all_tenants=True",
			want:      map[string]int{"viewer": 403, "demo": 403, "admin": 200},
			forbidden: "Policy doesn't allow os_compute_api:servers:detail:get_all_tenants to be performed."},
		{name: "Nova: a reader cannot stop a server, a member can",
			method: "POST", path: "/compute/v2.1/servers/" + demoVM.ID + "/action", body: stop,
			want:      map[string]int{"viewer": 403, "demo": 202},
			forbidden: "Policy doesn't allow os_compute_api:servers:action to be performed."},
		{name: "Neutron: a reader cannot create a network, a member can",
			method: "POST", path: "/networking/v2.0/networks", body: map[string]any{"network": map[string]any{"name": "n"}},
			want:      map[string]int{"viewer": 403, "demo": 201, "admin": 201},
			forbidden: `"message":"rule:create_network is disallowed by policy","type":"PolicyNotAuthorized"`},
		{name: "Neutron: another project's external network is readable but only admin deletes it",
			method: "DELETE", path: "/networking/v2.0/networks/" + opsNet.Networks[0].ID,
			want:      map[string]int{"viewer": 403, "demo": 403, "admin": 204},
			forbidden: "rule:delete_network is disallowed by policy"},
		{name: "Neutron: only an admin chooses a floating IP's address (create_floatingip:floating_ip_address is admin_only)",
			method: "POST", path: "/networking/v2.0/floatingips", body: map[string]any{"floatingip": map[string]any{
				"floating_network_id": public.Networks[0].ID, "floating_ip_address": "203.0.113.77"}},
			want:      map[string]int{"demo": 403, "admin": 201},
			forbidden: `"message":"(rule:create_floatingip and rule:create_floatingip:floating_ip_address) is disallowed by policy","type":"PolicyNotAuthorized"`},
		{name: "Neutron: a member allocates a floating IP whose address Neutron picks",
			method: "POST", path: "/networking/v2.0/floatingips", body: map[string]any{"floatingip": map[string]any{
				"floating_network_id": public.Networks[0].ID}},
			want: map[string]int{"viewer": 403, "demo": 201}},
		{name: "Octavia: observers and readers list load balancers",
			method: "GET", path: "/load-balancer/v2/lbaas/loadbalancers",
			want: map[string]int{"viewer": 200, "lb-observer": 200, "demo": 200}},
		{name: "Octavia: only members create load balancers",
			method: "POST", path: "/load-balancer/v2/lbaas/loadbalancers", body: lbBody,
			want:      map[string]int{"viewer": 403, "lb-observer": 403, "demo": 201, "admin": 201},
			forbidden: `"faultstring":"Policy does not allow this request to be performed."`},
	}
	passwords := map[string]string{"viewer": "viewer-secret", "demo": "secret", "admin": "admin-secret", "lb-observer": "observer-secret"}
	clients := map[string]*apiClient{}
	for user, pw := range passwords {
		clients[user] = login(t, authURL, user, pw)
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			for _, user := range []string{"viewer", "lb-observer", "demo", "admin"} {
				want, ok := c.want[user]
				if !ok {
					continue
				}
				r := clients[user].do(c.method, c.path, c.body)
				if r.code != want {
					t.Fatalf("%s: %s %s = %d %s, want %d", user, c.method, c.path, r.code, r.body, want)
				}
				if want == http.StatusForbidden && !strings.Contains(r.body, c.forbidden) {
					t.Errorf("%s: 403 body %s does not say %s", user, r.body, c.forbidden)
				}
			}
		})
	}
	t.Run("admin's all_tenants listing includes other projects' servers, a member's own listing does not", func(t *testing.T) {
		all := clients["admin"].do("GET", "/compute/v2.1/servers?all_tenants=1", nil).body
		own := clients["demo"].do("GET", "/compute/v2.1/servers", nil).body
		if !strings.Contains(all, "ops-vm") || strings.Contains(own, "ops-vm") || !strings.Contains(own, "demo-vm") {
			t.Fatalf("admin all_tenants: %s\nmember: %s", all, own)
		}
		if r := clients["demo"].do("GET", "/compute/v2.1/servers?all_tenants=maybe", nil); r.code != 400 {
			t.Fatalf("all_tenants=maybe: %d %s", r.code, r.body)
		}
	})
	t.Run("a member cannot use another project's private network", func(t *testing.T) {
		var opsPrivate string
		sim.mu.RLock()
		opsPrivate = sim.state.networkRef("ops-private").ID
		sim.mu.RUnlock()
		if r := clients["demo"].do("POST", "/networking/v2.0/ports", map[string]any{"port": map[string]any{"network_id": opsPrivate}}); r.code != 404 || !strings.Contains(r.body, "NetworkNotFound") {
			t.Errorf("port on ops-private as demo: %d %s", r.code, r.body)
		}
		boot := map[string]any{"server": map[string]any{"name": "x", "flavorRef": "1", "networks": []any{map[string]any{"uuid": opsPrivate}}}}
		if r := clients["demo"].do("POST", "/compute/v2.1/servers", boot); r.code != 400 {
			t.Errorf("boot on ops-private as demo: %d %s", r.code, r.body)
		}
		if r := clients["admin"].do("POST", "/networking/v2.0/ports", map[string]any{"port": map[string]any{"network_id": opsPrivate}}); r.code != 201 {
			t.Errorf("port on ops-private as admin: %d %s", r.code, r.body)
		}
	})
	t.Run("a member cannot see or change another project's server", func(t *testing.T) {
		opsVM, _ := sim.ServerByName("ops-vm")
		if r := clients["demo"].do("POST", "/compute/v2.1/servers/"+opsVM.ID+"/action", stop); r.code != 404 {
			t.Fatalf("stop ops-vm as demo: %d %s", r.code, r.body)
		}
		if sv, _ := sim.GetServer(opsVM.ID); sv.Status != "ACTIVE" {
			t.Fatalf("ops-vm is %s", sv.Status)
		}
	})
}

func (s *Sim) mustSubnet(t *testing.T, network string) string {
	t.Helper()
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.state.networkRef(network)
	if n == nil || len(n.SubnetIDs) == 0 {
		t.Fatalf("network %s has no subnet", network)
	}
	return n.SubnetIDs[0]
}

func TestApplicationCredentialsKeepTheirScopeAndRoles(t *testing.T) {
	_, authURL := startSim(t, Options{Seed: rolesSeed()})
	ro := login(t, authURL, "appcred:ac-ro", "ro-secret")
	rw := login(t, authURL, "appcred:ac-rw", "rw-secret")
	net := map[string]any{"network": map[string]any{"name": "n"}}
	if r := ro.do("POST", "/networking/v2.0/networks", net); r.code != 403 {
		t.Errorf("read-only application credential created a network: %d %s", r.code, r.body)
	}
	if r := ro.do("GET", "/compute/v2.1/servers", nil); r.code != 200 || !strings.Contains(r.body, "demo-vm") {
		t.Errorf("read-only application credential cannot read: %d %s", r.code, r.body)
	}
	if r := rw.do("POST", "/networking/v2.0/networks", net); r.code != 201 {
		t.Errorf("application credential with the user's roles: %d %s", r.code, r.body)
	}
	anon := &apiClient{t: t, base: strings.TrimSuffix(authURL, "/v3")}
	scoped := map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"application_credential"},
			"application_credential": map[string]any{"id": "ac-rw", "secret": "rw-secret"}},
		"scope": map[string]any{"project": map[string]any{"name": "ops", "domain": map[string]any{"name": "Default"}}}}}
	if r := anon.do("POST", "/v3/auth/tokens", scoped); r.code != 401 {
		t.Errorf("application credential asking for a scope: %d %s", r.code, r.body)
	}
	rescope := map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"token"}, "token": map[string]any{"id": rw.token}},
		"scope":    map[string]any{"project": map[string]any{"name": "demo", "domain": map[string]any{"name": "Default"}}}}}
	if r := anon.do("POST", "/v3/auth/tokens", rescope); r.code != 403 {
		t.Errorf("re-scoping an application credential's token: %d %s", r.code, r.body)
	}
}

func TestTokensCarryTheirEffectiveRoles(t *testing.T) {
	_, authURL := startSim(t, Options{Seed: rolesSeed()})
	for _, tc := range []struct{ user, password, has, lacks string }{
		{"viewer", "viewer-secret", `"name":"reader"`, `"name":"member"`},
		{"admin", "admin-secret", `"name":"member"`, `"name":"load-balancer_member"`},
		{"demo", "secret", `"name":"reader"`, `"name":"admin"`},
	} {
		c := login(t, authURL, tc.user, tc.password)
		c.extra = http.Header{"X-Subject-Token": {c.token}}
		r := c.do("GET", "/v3/auth/tokens", nil)
		if r.code != 200 || !strings.Contains(r.body, tc.has) || strings.Contains(r.body, tc.lacks) {
			t.Errorf("%s token: %d %s; want roles with %s and without %s", tc.user, r.code, r.body, tc.has, tc.lacks)
		}
	}
}
