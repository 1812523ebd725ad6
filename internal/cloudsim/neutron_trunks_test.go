package cloudsim

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestTrunksBehaveAsNeutronsOVNDriver follows Zed's trunk plugin with the
// OVN driver: a member trunks its server's port (bound ports may be
// parents), the subport takes device_owner trunk:subport and its parent's
// status, the parent shows trunk_details, a listing filters on port_id,
// ports in a trunk cannot be deleted, and the plugin's refusals answer with
// Neutron's statuses and types.
func TestTrunksBehaveAsNeutronsOVNDriver(t *testing.T) {
	sim, authURL := startSim(t, Options{Seed: rolesSeed()})
	vm, _ := sim.ServerByName("demo-vm")
	member := login(t, authURL, "demo", "secret")
	reader := login(t, authURL, "viewer", "viewer-secret")
	ops := login(t, authURL, "ops", "ops-secret")
	admin := login(t, authURL, "admin", "admin-secret")
	const net = "/networking/v2.0"
	decode := func(r apiReply, key string) map[string]any {
		t.Helper()
		var doc map[string]any
		if err := json.Unmarshal([]byte(r.body), &doc); err != nil {
			t.Fatalf("%s: %v", r.body, err)
		}
		if key == "" {
			return doc
		}
		m, _ := doc[key].(map[string]any)
		return m
	}
	netID := func(name string) string {
		var nets struct {
			Networks []struct{ ID string } `json:"networks"`
		}
		if err := json.Unmarshal([]byte(member.do("GET", net+"/networks?name="+name, nil).body), &nets); err != nil || len(nets.Networks) != 1 {
			t.Fatalf("network %s: %v %+v", name, err, nets)
		}
		return nets.Networks[0].ID
	}
	newPort := func(extra map[string]any) string {
		t.Helper()
		body := map[string]any{"network_id": netID("private")}
		for k, v := range extra {
			body[k] = v
		}
		r := member.do("POST", net+"/ports", map[string]any{"port": body})
		if r.code != http.StatusCreated {
			t.Fatalf("create port: %d %s", r.code, r.body)
		}
		return decode(r, "port")["id"].(string)
	}
	parent := vm.PortIDs[0]
	sub, sub2 := newPort(nil), newPort(nil)
	busy := newPort(map[string]any{"device_id": "some-device"})
	want := func(t *testing.T, r apiReply, code int, typ string) {
		t.Helper()
		if r.code != code || !strings.Contains(r.body, typ) {
			t.Fatalf("got %d %s, want %d %s", r.code, r.body, code, typ)
		}
	}
	vlan := func(port string, id int) map[string]any {
		return map[string]any{"port_id": port, "segmentation_type": "vlan", "segmentation_id": id}
	}

	r := member.do("POST", net+"/trunks", map[string]any{"trunk": map[string]any{"port_id": parent, "name": "t0", "sub_ports": []any{vlan(sub, 100)}}})
	// As real Neutron answered on the lab's lane: ACTIVE, revision 1.
	want(t, r, http.StatusCreated, `"status":"ACTIVE"`)
	want(t, r, http.StatusCreated, `"revision_number":1,`)
	trunkID := decode(r, "trunk")["id"].(string)

	t.Run("the subport takes device_owner trunk:subport and its parent's status", func(t *testing.T) {
		p := decode(member.do("GET", net+"/ports/"+sub, nil), "port")
		if p["device_owner"] != "trunk:subport" || p["status"] != "ACTIVE" || p["device_id"] != "" {
			t.Fatalf("subport: owner %v status %v device %v; want trunk:subport, ACTIVE (the parent's), no device", p["device_owner"], p["status"], p["device_id"])
		}
		// An admin sees what the OVN driver set: vif_type ovs, no host.
		if p := decode(admin.do("GET", net+"/ports/"+sub, nil), "port"); p["binding:vif_type"] != "ovs" || p["binding:host_id"] != "" {
			t.Fatalf("subport as admin: vif_type %v host %v; want ovs and no host", p["binding:vif_type"], p["binding:host_id"])
		}
	})
	t.Run("the parent port shows trunk_details, other ports none", func(t *testing.T) {
		d, _ := decode(member.do("GET", net+"/ports/"+parent, nil), "port")["trunk_details"].(map[string]any)
		subs, _ := d["sub_ports"].([]any)
		if d["trunk_id"] != trunkID || len(subs) != 1 || subs[0].(map[string]any)["mac_address"] == nil {
			t.Fatalf("trunk_details %v; want trunk %s with one subport and its MAC", d, trunkID)
		}
		if _, ok := decode(member.do("GET", net+"/ports/"+sub, nil), "port")["trunk_details"]; ok {
			t.Fatalf("a subport shows trunk_details")
		}
	})
	t.Run("a listing filters on port_id; another project sees no trunk", func(t *testing.T) {
		count := func(c *apiClient, q string) int {
			var doc struct{ Trunks []any }
			if err := json.Unmarshal([]byte(c.do("GET", net+"/trunks"+q, nil).body), &doc); err != nil {
				t.Fatal(err)
			}
			return len(doc.Trunks)
		}
		if n := count(member, "?port_id="+parent+"&port_id="+sub2); n != 1 {
			t.Fatalf("trunks of the parent or another port: %d, want 1", n)
		}
		if n := count(member, "?port_id="+sub2); n != 0 {
			t.Fatalf("trunks of a port that is no parent: %d, want 0", n)
		}
		if n := count(ops, ""); n != 0 {
			t.Fatalf("another project lists %d trunks, want 0", n)
		}
		want(t, ops.do("GET", net+"/trunks/"+trunkID, nil), http.StatusNotFound, "TrunkNotFound")
	})
	t.Run("Neutron's refusals", func(t *testing.T) {
		want(t, member.do("DELETE", net+"/ports/"+sub, nil), http.StatusConflict, "PortInUseAsSubPort")
		want(t, member.do("DELETE", net+"/ports/"+parent, nil), http.StatusConflict, "PortInUseAsTrunkParent")
		want(t, member.do("POST", net+"/trunks", map[string]any{"trunk": map[string]any{"port_id": parent}}), http.StatusConflict, "ParentPortInUse")
		want(t, member.do("POST", net+"/trunks", map[string]any{"trunk": map[string]any{"port_id": sub}}), http.StatusConflict, "TrunkPortInUse")
		add := func(sp map[string]any) apiReply {
			return member.do("PUT", net+"/trunks/"+trunkID+"/add_subports", map[string]any{"sub_ports": []any{sp}})
		}
		want(t, add(vlan(busy, 101)), http.StatusConflict, "PortInUse")
		want(t, add(vlan(sub2, 100)), http.StatusConflict, "DuplicateSubPort")
		want(t, add(vlan(sub2, 5000)), http.StatusBadRequest, "is not in range")
		want(t, add(map[string]any{"port_id": sub2, "segmentation_type": "vxlan", "segmentation_id": 7}), http.StatusBadRequest, "Unknown segmentation_type")
		want(t, reader.do("PUT", net+"/trunks/"+trunkID+"/add_subports", map[string]any{"sub_ports": []any{vlan(sub2, 101)}}), http.StatusForbidden, "PolicyNotAuthorized")
		want(t, member.do("PUT", net+"/trunks/"+trunkID+"/remove_subports", map[string]any{"sub_ports": []any{map[string]any{"port_id": sub2}}}), http.StatusNotFound, "SubPortNotFound")
	})
	t.Run("add and remove answer with the trunk itself; a removed subport loses its owner", func(t *testing.T) {
		r := member.do("PUT", net+"/trunks/"+trunkID+"/add_subports", map[string]any{"sub_ports": []any{vlan(sub2, 101)}})
		if doc := decode(r, ""); r.code != http.StatusOK || doc["id"] != trunkID || len(doc["sub_ports"].([]any)) != 2 {
			t.Fatalf("add_subports: %d %s; want 200 and the unwrapped trunk with two subports", r.code, r.body)
		}
		r = member.do("PUT", net+"/trunks/"+trunkID+"/remove_subports", map[string]any{"sub_ports": []any{map[string]any{"port_id": sub2}}})
		if doc := decode(r, ""); r.code != http.StatusOK || len(doc["sub_ports"].([]any)) != 1 {
			t.Fatalf("remove_subports: %d %s; want 200 and one subport left", r.code, r.body)
		}
		if p := decode(member.do("GET", net+"/ports/"+sub2, nil), "port"); p["device_owner"] != "" {
			t.Fatalf("a removed subport keeps device_owner %v", p["device_owner"])
		}
		if r := member.do("GET", net+"/trunks/"+trunkID+"/get_subports", nil); !strings.Contains(r.body, sub) || strings.Contains(r.body, sub2) {
			t.Fatalf("get_subports: %s; want only %s", r.body, sub)
		}
	})
	t.Run("a deleted trunk frees its ports", func(t *testing.T) {
		want(t, member.do("DELETE", net+"/trunks/"+trunkID, nil), http.StatusNoContent, "")
		want(t, member.do("GET", net+"/trunks/"+trunkID, nil), http.StatusNotFound, "TrunkNotFound")
		want(t, member.do("DELETE", net+"/ports/"+sub, nil), http.StatusNoContent, "")
	})
}
