package cloudsim

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// Answers the real Zed services gave to e2e/realcloud's differential
// fidelity test, where the simulator first answered otherwise.
func TestListsPortsAndFloatingIPsAnswerAsTheRealServices(t *testing.T) {
	sim, authURL := startSim(t, Options{Seed: testSeed()})
	c := login(t, authURL, "demo", "secret")
	subnet := sim.mustSubnet(t, "private")
	node1, ok1 := sim.ServerByName("node-1")
	node2, ok2 := sim.ServerByName("node-2")
	if !ok1 || !ok2 {
		t.Fatal("seed servers missing")
	}
	publicID := sim.state.networkRef("public").ID
	createLB := func(name, provider string) map[string]any {
		r := c.do("POST", "/load-balancer/v2/lbaas/loadbalancers", map[string]any{"loadbalancer": map[string]any{
			"name": name, "vip_subnet_id": subnet, "provider": provider, "tags": []string{"real-answers"}}})
		if r.code != http.StatusCreated {
			t.Fatalf("create %s load balancer: %d %s", provider, r.code, r.body)
		}
		return jsonOf(t, r.body)["loadbalancer"].(map[string]any)
	}

	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"a full page of ports links a next page, and that page is empty", func(t *testing.T) {
			r := c.do("GET", "/networking/v2.0/ports?limit=1&device_id="+node2.ID, nil)
			next := nextLink(t, r)
			if next == "" || !strings.Contains(next, "device_id="+node2.ID) {
				t.Fatalf("first page's next link %q, want one that keeps the filter (%s)", next, r.body)
			}
			r = c.do("GET", next, nil)
			if got := jsonOf(t, r.body)["ports"].([]any); len(got) != 0 || nextLink(t, r) != "" {
				t.Errorf("second page: %s, want no ports and no next link", r.body)
			}
		}},
		{"Octavia's lists always carry links, and its next link keeps only limit and marker", func(t *testing.T) {
			createLB("ra-1", "amphora")
			createLB("ra-2", "amphora")
			r := c.do("GET", "/load-balancer/v2/lbaas/loadbalancers?name=ra-1", nil)
			if _, ok := jsonOf(t, r.body)["loadbalancers_links"]; !ok {
				t.Errorf("a list without paging has no loadbalancers_links: %s", r.body)
			}
			r = c.do("GET", "/load-balancer/v2/lbaas/loadbalancers?limit=1&tags=real-answers", nil)
			u, err := url.Parse(nextLink(t, r))
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for k := range u.Query() {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, []string{"limit", "marker"}) {
				t.Errorf("next link %s has parameters %v, want limit and marker only", u, keys)
			}
		}},
		{"an amphora VIP port is administratively down and DOWN, an OVN one is up", func(t *testing.T) {
			for provider, want := range map[string]bool{"amphora": false, "ovn": true} {
				lb := createLB("ra-vip-"+provider, provider)
				r := c.do("GET", "/networking/v2.0/ports/"+lb["vip_port_id"].(string), nil)
				port := jsonOf(t, r.body)["port"].(map[string]any)
				if port["admin_state_up"] != want || port["status"] != "DOWN" {
					t.Errorf("%s VIP port: admin_state_up %v status %v, want %v and DOWN", provider, port["admin_state_up"], port["status"], want)
				}
			}
		}},
		{"a second floating IP for a port's fixed IP is refused with 409", func(t *testing.T) {
			port := mustServerPort(t, sim, "node-1") // the seed gave it a floating IP
			r := c.do("POST", "/networking/v2.0/floatingips", map[string]any{"floatingip": map[string]any{"floating_network_id": publicID, "port_id": port}})
			if r.code != http.StatusConflict || !strings.Contains(r.body, "FloatingIPPortAlreadyAssociated") {
				t.Errorf("create: %d %s, want 409 FloatingIPPortAlreadyAssociated", r.code, r.body)
			}
			r = c.do("POST", "/networking/v2.0/floatingips", map[string]any{"floatingip": map[string]any{"floating_network_id": publicID}})
			if r.code != http.StatusCreated {
				t.Fatalf("create unassociated: %d %s", r.code, r.body)
			}
			id := jsonOf(t, r.body)["floatingip"].(map[string]any)["id"].(string)
			r = c.do("PUT", "/networking/v2.0/floatingips/"+id, map[string]any{"floatingip": map[string]any{"port_id": port}})
			if r.code != http.StatusConflict || !strings.Contains(r.body, "FloatingIPPortAlreadyAssociated") {
				t.Errorf("associate: %d %s, want 409 FloatingIPPortAlreadyAssociated", r.code, r.body)
			}
			if srv, _ := sim.GetServer(node1.ID); len(srv.Addresses) != 2 {
				t.Errorf("node-1 addresses %v, want its fixed and its one floating IP", srv.Addresses)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

func jsonOf(t *testing.T, body string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return m
}

// nextLink is the request URI of the answer's next link ("" for none).
func nextLink(t *testing.T, r apiReply) string {
	t.Helper()
	for k, v := range jsonOf(t, r.body) {
		if !strings.HasSuffix(k, "_links") {
			continue
		}
		for _, l := range v.([]any) {
			if m := l.(map[string]any); m["rel"] == "next" {
				u, err := url.Parse(m["href"].(string))
				if err != nil {
					t.Fatal(err)
				}
				return u.RequestURI()
			}
		}
	}
	return ""
}
