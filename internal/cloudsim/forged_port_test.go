package cloudsim

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestAPortCarryingAServersDeviceIDIsNotBound follows real Neutron (Zed,
// ML2/OVN, checked in the real-cloud lane): a project member may create a
// port with a server's device_id and device_owner compute:nova, but nothing
// binds it, so it stays DOWN with no host; and the binding fields are shown
// to admins only, while the server's own port is ACTIVE and bound.
func TestAPortCarryingAServersDeviceIDIsNotBound(t *testing.T) {
	sim, authURL := startSim(t, Options{Seed: rolesSeed()})
	vm, _ := sim.ServerByName("demo-vm")
	member := login(t, authURL, "demo", "secret")
	reader := login(t, authURL, "viewer", "viewer-secret")
	admin := login(t, authURL, "admin", "admin-secret")
	var nets struct {
		Networks []struct{ ID string } `json:"networks"`
	}
	if err := json.Unmarshal([]byte(member.do("GET", "/networking/v2.0/networks?name=private", nil).body), &nets); err != nil || len(nets.Networks) != 1 {
		t.Fatalf("network private: %v %+v", err, nets)
	}
	r := member.do("POST", "/networking/v2.0/ports", map[string]any{"port": map[string]any{
		"network_id": nets.Networks[0].ID, "device_id": vm.ID, "device_owner": "compute:nova"}})
	if r.code != http.StatusCreated {
		t.Fatalf("a member's port with the server's device_id: %d %s, want 201 as Neutron answers", r.code, r.body)
	}
	var created struct{ Port map[string]any }
	if err := json.Unmarshal([]byte(r.body), &created); err != nil {
		t.Fatal(err)
	}
	forged := created.Port["id"].(string)

	port := func(c *apiClient, id string) map[string]any {
		t.Helper()
		r := c.do("GET", "/networking/v2.0/ports/"+id, nil)
		var doc struct{ Port map[string]any }
		if err := json.Unmarshal([]byte(r.body), &doc); err != nil || r.code != http.StatusOK {
			t.Fatalf("GET port %s: %d %s", id, r.code, r.body)
		}
		return doc.Port
	}
	adminOnly := []string{"binding:host_id", "binding:vif_type", "binding:vif_details", "binding:profile"}
	tests := []struct {
		name   string
		client *apiClient
		portID string
		want   map[string]any // field → value; nil value: the field is absent
	}{
		{"the member who forged it sees it DOWN and no binding fields", member, forged,
			map[string]any{"status": "DOWN", "device_id": vm.ID, "binding:host_id": nil, "binding:vif_type": nil, "binding:vnic_type": "normal"}},
		{"a reader of the project sees it DOWN and no binding fields", reader, forged,
			map[string]any{"status": "DOWN", "binding:host_id": nil, "binding:profile": nil}},
		{"an admin sees it unbound: no host, vif_type unbound", admin, forged,
			map[string]any{"status": "DOWN", "binding:host_id": "", "binding:vif_type": "unbound"}},
		{"an admin sees the server's own port ACTIVE and bound to a host", admin, vm.PortIDs[0],
			map[string]any{"status": "ACTIVE", "binding:host_id": "cloudsim-nova", "binding:vif_type": "ovs"}},
		{"a reader sees the server's own port ACTIVE without its binding", reader, vm.PortIDs[0],
			map[string]any{"status": "ACTIVE", "binding:host_id": nil, "binding:vnic_type": "normal"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := port(tt.client, tt.portID)
			for k, want := range tt.want {
				v, present := got[k]
				switch {
				case want == nil && present:
					t.Errorf("%s = %v is shown; Neutron shows it to admins only (%v)", k, v, adminOnly)
				case want != nil && v != want:
					t.Errorf("%s = %v, want %v", k, v, want)
				}
			}
		})
	}
	// Listing by device_id (what the approver does) answers the same.
	r = reader.do("GET", "/networking/v2.0/ports?device_id="+vm.ID, nil)
	var list struct{ Ports []map[string]any }
	if err := json.Unmarshal([]byte(r.body), &list); err != nil || len(list.Ports) != 2 {
		t.Fatalf("ports of %s: %d %s", vm.ID, r.code, r.body)
	}
	for _, p := range list.Ports {
		if _, shown := p["binding:host_id"]; shown {
			t.Errorf("port %s lists binding:host_id to a reader", p["id"])
		}
		if want := map[bool]string{true: "DOWN", false: "ACTIVE"}[p["id"] == forged]; p["status"] != want {
			t.Errorf("port %s listed %v, want %s", p["id"], p["status"], want)
		}
	}
}
