package cloudsim

import (
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Neutron trunks (the trunk service plugin with ML2/OVN's trunk driver): a
// parent port a server uses as its NIC carries subports as VLANs. What a
// client sees is what Zed's OVN driver does: a trunk is ACTIVE once made;
// a subport joining takes device_owner trunk:subport and its parent's
// status, and leaving resets its device_owner; a parent port shows
// trunk_details; a port that is a parent or a subport cannot be deleted.

type trunk struct {
	ID, Name, Description, ProjectID, PortID, Status string
	AdminUp                                          bool
	SubPorts                                         []subPort
	Created, Updated                                 time.Time
	Revision                                         int
}

type subPort struct {
	PortID           string `json:"port_id"`
	SegmentationType string `json:"segmentation_type"`
	SegmentationID   int    `json:"segmentation_id"`
}

func (t *trunk) owner() string { return t.ProjectID }

var trunkRes = neutronResource[trunk]("trunk", "trunks", func(st *state) *coll[trunk] { return st.trunks },
	(*Sim).trunkView, "TrunkNotFound", "Trunk %s could not be found.")

func (s *Sim) routesTrunks(h routeFunc) {
	h("GET /trunks", "trunks.list", trunkRes.list(s, nil))
	h("GET /trunks/{id}", "trunks.get", trunkRes.show(s))
	h("POST /trunks", "trunks.create", s.createTrunk)
	h("PUT /trunks/{id}", "trunks.update", updateHandler(s, trunkRes, updateTrunk))
	h("DELETE /trunks/{id}", "trunks.delete", trunkRes.remove(s, removeTrunk))
	h("PUT /trunks/{id}/add_subports", "trunks.add_subports", withBody(s, trunkRes, "add_subports", s.addSubports))
	h("PUT /trunks/{id}/remove_subports", "trunks.remove_subports", withBody(s, trunkRes, "remove_subports", s.removeSubports))
	h("GET /trunks/{id}/get_subports", "trunks.get_subports", trunkRes.with(s, "", func(w http.ResponseWriter, _ *http.Request, _ *state, t *trunk) {
		writeJSON(w, http.StatusOK, map[string]any{"sub_ports": subPortsView(t.SubPorts)})
	}))
}

func subPortsView(list []subPort) []any {
	out := make([]any, 0, len(list))
	for _, sp := range list {
		out = append(out, map[string]any{"port_id": sp.PortID, "segmentation_type": sp.SegmentationType, "segmentation_id": sp.SegmentationID})
	}
	return out
}

func (s *Sim) trunkView(t *trunk) map[string]any {
	return map[string]any{
		"id": t.ID, "name": t.Name, "description": t.Description, "port_id": t.PortID,
		"tenant_id": t.ProjectID, "project_id": t.ProjectID, "status": t.Status, "admin_state_up": t.AdminUp,
		"sub_ports": subPortsView(t.SubPorts), "tags": []string{},
		"created_at": neutronTS(t.Created), "updated_at": neutronTS(t.Updated), "revision_number": t.Revision,
	}
}

// trunkDetails is a parent port's trunk_details (nil for other ports).
func (st *state) trunkDetails(p *port) map[string]any {
	t := st.trunkOfParent(p.ID)
	if t == nil {
		return nil
	}
	subs := make([]any, 0, len(t.SubPorts))
	for _, sp := range t.SubPorts {
		m := map[string]any{"port_id": sp.PortID, "segmentation_type": sp.SegmentationType, "segmentation_id": sp.SegmentationID}
		if q, ok := st.ports.get(sp.PortID); ok {
			m["mac_address"] = q.MAC
		}
		subs = append(subs, m)
	}
	return map[string]any{"trunk_id": t.ID, "sub_ports": subs}
}

func (st *state) trunkOfParent(portID string) *trunk {
	for _, t := range st.trunks.all() {
		if t.PortID == portID {
			return t
		}
	}
	return nil
}

func (st *state) trunkOfSubport(portID string) *trunk {
	for _, t := range st.trunks.all() {
		for _, sp := range t.SubPorts {
			if sp.PortID == portID {
				return t
			}
		}
	}
	return nil
}

type trunkBody struct {
	Trunk struct {
		PortID       string    `json:"port_id"`
		Name         *string   `json:"name"`
		Description  *string   `json:"description"`
		AdminStateUp *flexBool `json:"admin_state_up"`
		SubPorts     []subPort `json:"sub_ports"`
	} `json:"trunk"`
}

type subPortsBody struct {
	SubPorts []subPort `json:"sub_ports"`
}

func (s *Sim) createTrunk(w http.ResponseWriter, r *http.Request) {
	var req trunkBody
	if err := decodeBody(r, &req); err != nil {
		neutronError(w, http.StatusBadRequest, "BadRequest", "%v", err)
		return
	}
	b := req.Trunk
	if b.PortID == "" {
		neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Failed to parse request. Required attribute 'port_id' not specified")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state
	parent := portRes.find(w, r, st, b.PortID, "")
	if parent == nil {
		return
	}
	if err := st.checkTrunkParent(parent); err != nil {
		writeErr(w, ServiceNetwork, err)
		return
	}
	t := &trunk{ID: newID(), ProjectID: projectOf(r), PortID: parent.ID, Status: "DOWN", AdminUp: true, Revision: 1}
	if err := st.checkSubPorts(r, t, b.SubPorts); err != nil {
		writeErr(w, ServiceNetwork, err)
		return
	}
	setIf(&t.Name, b.Name)
	setIf(&t.Description, b.Description)
	setBool(&t.AdminUp, b.AdminStateUp)
	t.Created = time.Now()
	t.Updated = t.Created
	st.trunks.add(t.ID, t)
	st.joinTrunk(t, parent, b.SubPorts)
	writeJSON(w, http.StatusCreated, map[string]any{"trunk": trunkRes.render(s, r, t)})
}

// checkTrunkParent refuses a port already in a trunk (OVN's driver trunks
// bound ports, so a server's NIC may become a parent).
func (st *state) checkTrunkParent(p *port) error {
	if st.trunkOfSubport(p.ID) != nil {
		return apiErr(http.StatusConflict, "TrunkPortInUse", "Port %s is in use by another trunk.", p.ID)
	}
	if st.trunkOfParent(p.ID) != nil {
		return apiErr(http.StatusConflict, "ParentPortInUse", "Port %s is currently in use and is not eligible for use as a parent port.", p.ID)
	}
	return nil
}

// checkSubPorts validates subports joining t, as Neutron's
// SubPortsValidator does, before anything changes.
func (st *state) checkSubPorts(r *http.Request, t *trunk, subs []subPort) error {
	seen := map[string]bool{}
	for _, sp := range subs {
		switch {
		case sp.PortID == "":
			return apiErr(http.StatusBadRequest, "HTTPBadRequest", "Invalid input for sub_ports. Reason: A valid port UUID must be specified.")
		case seen[sp.PortID]:
			return apiErr(http.StatusBadRequest, "HTTPBadRequest", "Invalid input for sub_ports. Reason: Non unique UUID for subport: '%s'.", sp.PortID)
		case sp.SegmentationType != "vlan":
			return apiErr(http.StatusBadRequest, "InvalidInput", "Invalid input for operation: Unknown segmentation_type '%s'.", sp.SegmentationType)
		case sp.SegmentationID < 1 || sp.SegmentationID > 4094:
			return apiErr(http.StatusBadRequest, "InvalidInput", "Invalid input for operation: Segmentation ID '%d' is not in range.", sp.SegmentationID)
		}
		seen[sp.PortID] = true
		p, err := portRes.lookup(r, st, sp.PortID, "")
		if err != nil {
			return err
		}
		if p.ID == t.PortID {
			return apiErr(http.StatusConflict, "ParentPortInUse", "Port %s is currently in use and is not eligible for use as a parent port.", p.ID)
		}
		if st.trunkOfSubport(p.ID) != nil || st.trunkOfParent(p.ID) != nil {
			return apiErr(http.StatusConflict, "TrunkPortInUse", "Port %s is in use by another trunk.", p.ID)
		}
		if p.DeviceID != "" {
			return apiErr(http.StatusConflict, "PortInUse", "Unable to complete operation on port %s for network %s. Port already has an attached device %s.", p.ID, p.NetworkID, p.DeviceID)
		}
		for _, have := range t.SubPorts {
			if have.SegmentationType == sp.SegmentationType && have.SegmentationID == sp.SegmentationID {
				return apiErr(http.StatusConflict, "DuplicateSubPort", "segmentation_type %s and segmentation_id %d already in use on trunk %s.", sp.SegmentationType, sp.SegmentationID, t.ID)
			}
		}
	}
	return nil
}

// joinTrunk adds subports to t as OVN's trunk driver does. The trunk's
// revision_number is its caller's: a create answers 1, as Neutron does.
func (st *state) joinTrunk(t *trunk, parent *port, subs []subPort) {
	now := time.Now()
	for _, sp := range subs {
		p := st.ports.byID[sp.PortID]
		p.DeviceOwner = "trunk:subport"
		p.Status = parent.Status
		p.Updated = now
		p.Revision++
		t.SubPorts = append(t.SubPorts, sp)
	}
	t.Status = "ACTIVE"
	t.Updated = now
}

func (s *Sim) addSubports(w http.ResponseWriter, r *http.Request, st *state, t *trunk, b *subPortsBody) {
	if !t.AdminUp {
		writeErr(w, ServiceNetwork, apiErr(http.StatusConflict, "TrunkDisabled", "Trunk %s is currently disabled.", t.ID))
		return
	}
	if err := st.checkSubPorts(r, t, b.SubPorts); err != nil {
		writeErr(w, ServiceNetwork, err)
		return
	}
	st.joinTrunk(t, st.ports.byID[t.PortID], b.SubPorts)
	t.Revision++
	// Neutron answers an action with the trunk itself, not wrapped.
	writeJSON(w, http.StatusOK, trunkRes.render(s, r, t))
}

func (s *Sim) removeSubports(w http.ResponseWriter, r *http.Request, st *state, t *trunk, b *subPortsBody) {
	if !t.AdminUp {
		writeErr(w, ServiceNetwork, apiErr(http.StatusConflict, "TrunkDisabled", "Trunk %s is currently disabled.", t.ID))
		return
	}
	keep := append([]subPort(nil), t.SubPorts...)
	var gone []string
	for _, sp := range b.SubPorts {
		i := -1
		for j, have := range keep {
			if have.PortID == sp.PortID {
				i = j
			}
		}
		if i < 0 {
			writeErr(w, ServiceNetwork, apiErr(http.StatusNotFound, "SubPortNotFound", "SubPort %s on trunk %s could not be found.", sp.PortID, t.ID))
			return
		}
		keep = append(keep[:i], keep[i+1:]...)
		gone = append(gone, sp.PortID)
	}
	st.leaveTrunk(gone)
	t.SubPorts = keep
	t.Updated = time.Now()
	t.Revision++
	writeJSON(w, http.StatusOK, trunkRes.render(s, r, t))
}

// leaveTrunk resets the subports' device_owner (their status stays).
func (st *state) leaveTrunk(portIDs []string) {
	for _, id := range portIDs {
		if p, ok := st.ports.get(id); ok {
			p.DeviceOwner = ""
			p.Updated = time.Now()
			p.Revision++
		}
	}
}

func updateTrunk(r *http.Request, _ *state, t *trunk, req *trunkBody) error {
	if err := ifMatch(r, t.Revision); err != nil {
		return err
	}
	if req.Trunk.PortID != "" && req.Trunk.PortID != t.PortID {
		return apiErr(http.StatusBadRequest, "HTTPBadRequest", "Cannot update read-only attribute port_id")
	}
	setIf(&t.Name, req.Trunk.Name)
	setIf(&t.Description, req.Trunk.Description)
	setBool(&t.AdminUp, req.Trunk.AdminStateUp)
	t.Updated = time.Now()
	t.Revision++
	return nil
}

// removeTrunk deletes an enabled trunk; its subports leave it.
func removeTrunk(st *state, t *trunk) error {
	if !t.AdminUp {
		return apiErr(http.StatusConflict, "TrunkDisabled", "Trunk %s is currently disabled.", t.ID)
	}
	st.dropTrunk(t)
	return nil
}

func (st *state) dropTrunk(t *trunk) {
	var ids []string
	for _, sp := range t.SubPorts {
		ids = append(ids, sp.PortID)
	}
	st.leaveTrunk(ids)
	st.trunks.del(t.ID)
}

// trunkPortInUse refuses deleting a trunk's parent or subport.
func (st *state) trunkPortInUse(p *port) error {
	if t := st.trunkOfParent(p.ID); t != nil {
		return apiErr(http.StatusConflict, "PortInUseAsTrunkParent", "Port %s is currently a parent port for trunk %s.", p.ID, t.ID)
	}
	if t := st.trunkOfSubport(p.ID); t != nil {
		return apiErr(http.StatusConflict, "PortInUseAsSubPort", "Port %s is currently a subport for trunk %s.", p.ID, t.ID)
	}
	return nil
}

// AddSubport gives the server a port on network (name or ID; fixedIP or
// the next free address) as a VLAN subport of the trunk on its first port,
// making that trunk when there is none, as a project member would through
// the API. It returns the subport's ID and address.
func (s *Sim) AddSubport(serverID, network, address string, vlan int) (portID, ip string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state
	sv, ok := st.servers.get(serverID)
	if !ok || len(sv.PortIDs) == 0 {
		return "", "", fmt.Errorf("server %s with a port: %w", serverID, ErrNotFound)
	}
	parent := st.ports.byID[sv.PortIDs[0]]
	nw := st.networkRef(network)
	if nw == nil {
		return "", "", fmt.Errorf("network %q: %w", network, ErrNotFound)
	}
	ps := portSpec{NetworkID: nw.ID, ProjectID: sv.ProjectID, SecurityGroups: []string{st.defaultSecGroup(sv.ProjectID)}}
	if address != "" {
		ps.FixedIPs = []fixedIP{{IP: address}}
	}
	t := st.trunkOfParent(parent.ID)
	if t == nil {
		now := time.Now()
		t = &trunk{ID: newID(), ProjectID: sv.ProjectID, PortID: parent.ID, Status: "DOWN", AdminUp: true, Revision: 1, Created: now, Updated: now}
		st.trunks.add(t.ID, t)
	}
	for _, have := range t.SubPorts {
		if have.SegmentationID == vlan {
			return "", "", fmt.Errorf("VLAN %d already in use on trunk %s", vlan, t.ID)
		}
	}
	p, err := st.createPort(ps)
	if err != nil {
		return "", "", fmt.Errorf("subport on %q of %s: %w", network, serverID, err)
	}
	p.Status = "DOWN" // a new port, until it joins the trunk
	st.joinTrunk(t, parent, []subPort{{PortID: p.ID, SegmentationType: "vlan", SegmentationID: vlan}})
	return p.ID, p.FixedIPs[0].IP, nil
}

// RemoveSubport takes the port out of its trunk and deletes it.
func (s *Sim) RemoveSubport(portID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.state.trunkOfSubport(portID)
	if t == nil {
		return fmt.Errorf("subport %s: %w", portID, ErrNotFound)
	}
	t.SubPorts = slices.DeleteFunc(t.SubPorts, func(sp subPort) bool { return sp.PortID == portID })
	t.Revision++
	s.state.deletePort(portID)
	return nil
}
