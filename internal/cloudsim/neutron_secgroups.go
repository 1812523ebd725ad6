package cloudsim

import (
	"net/http"
	"strings"
	"time"
)

// Neutron security groups and rules (Octavia-less CCM setups and the
// load-balancer code manage node security groups through them).

func (s *Sim) routesSecGroups(h routeFunc) {
	h("GET /security-groups", "security-groups.list", secGroupRes.list(s, nil))
	h("GET /security-groups/{id}", "security-groups.get", secGroupRes.show(s))
	h("POST /security-groups", "security-groups.create", s.createSecGroup)
	h("DELETE /security-groups/{id}", "security-groups.delete", secGroupRes.remove(s, removeSecGroup))
	h("GET /security-group-rules", "security-group-rules.list", secRuleRes.list(s, nil))
	h("GET /security-group-rules/{id}", "security-group-rules.get", secRuleRes.show(s))
	h("POST /security-group-rules", "security-group-rules.create", s.createSecRule)
	h("DELETE /security-group-rules/{id}", "security-group-rules.delete", secRuleRes.remove(s, func(st *state, x *secRule) error {
		st.secRules.del(x.ID)
		return nil
	}))
}

func ruleView(x *secRule) map[string]any {
	opt := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	var pmin, pmax any
	if x.PortMin != nil {
		pmin = *x.PortMin
	}
	if x.PortMax != nil {
		pmax = *x.PortMax
	}
	return map[string]any{
		"id": x.ID, "security_group_id": x.GroupID, "direction": x.Direction, "ethertype": x.Ethertype,
		"protocol": opt(x.Protocol), "port_range_min": pmin, "port_range_max": pmax,
		"remote_ip_prefix": opt(x.RemoteIPPrefix), "remote_group_id": opt(x.RemoteGroupID),
		"remote_address_group_id": nil, "description": x.Description, "tenant_id": x.ProjectID,
		"project_id": x.ProjectID, "created_at": neutronTS(x.Created), "updated_at": neutronTS(x.Created),
		"revision_number": 0,
	}
}

func (s *Sim) secGroupView(g *secGroup) map[string]any {
	rules := []any{}
	for _, x := range s.state.secRules.all() {
		if x.GroupID == g.ID {
			rules = append(rules, ruleView(x))
		}
	}
	return map[string]any{
		"id": g.ID, "name": g.Name, "description": g.Description, "tenant_id": g.ProjectID, "project_id": g.ProjectID,
		"security_group_rules": rules, "stateful": true, "shared": false, "tags": append([]string{}, g.Tags...),
		"created_at": neutronTS(g.Created), "updated_at": neutronTS(g.Created), "revision_number": 1,
	}
}

func (s *Sim) createSecGroup(w http.ResponseWriter, r *http.Request) {
	var req struct {
		G struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"security_group"`
	}
	if err := decodeBody(r, &req); err != nil {
		neutronError(w, http.StatusBadRequest, "BadRequest", "%v", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := &secGroup{ID: newID(), Name: req.G.Name, Description: req.G.Description, ProjectID: projectOf(r), Created: time.Now()}
	s.state.secGroups.add(g.ID, g)
	for _, eth := range []string{"IPv4", "IPv6"} {
		x := &secRule{ID: newID(), GroupID: g.ID, ProjectID: g.ProjectID, Direction: "egress", Ethertype: eth, Created: g.Created}
		s.state.secRules.add(x.ID, x)
	}
	writeJSON(w, http.StatusCreated, map[string]any{"security_group": s.secGroupView(g)})
}

// removeSecGroup deletes a group no port uses, with its rules.
func removeSecGroup(st *state, g *secGroup) error {
	for _, p := range st.ports.all() {
		for _, sg := range p.SecurityGroups {
			if sg == g.ID {
				return apiErr(http.StatusConflict, "SecurityGroupInUse", "Security Group %s in use.", g.ID)
			}
		}
	}
	for _, x := range st.secRules.all() {
		if x.GroupID == g.ID {
			st.secRules.del(x.ID)
		}
	}
	st.secGroups.del(g.ID)
	return nil
}

func (s *Sim) createSecRule(w http.ResponseWriter, r *http.Request) {
	var req struct {
		R struct {
			GroupID        string `json:"security_group_id"`
			Direction      string `json:"direction"`
			Ethertype      string `json:"ethertype"`
			Protocol       string `json:"protocol"`
			PortMin        *int   `json:"port_range_min"`
			PortMax        *int   `json:"port_range_max"`
			RemoteIPPrefix string `json:"remote_ip_prefix"`
			RemoteGroupID  string `json:"remote_group_id"`
			Description    string `json:"description"`
		} `json:"security_group_rule"`
	}
	if err := decodeBody(r, &req); err != nil {
		neutronError(w, http.StatusBadRequest, "BadRequest", "%v", err)
		return
	}
	b := req.R
	if b.Direction != "ingress" && b.Direction != "egress" {
		neutronError(w, http.StatusBadRequest, "InvalidInput", "Invalid input for direction. Reason: %q is not in [ingress, egress].", b.Direction)
		return
	}
	if b.Ethertype == "" {
		b.Ethertype = "IPv4"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state
	g := secGroupRes.find(w, r, st, b.GroupID, "update")
	if g == nil {
		return
	}
	x := &secRule{ID: newID(), GroupID: g.ID, ProjectID: g.ProjectID, Direction: b.Direction, Ethertype: b.Ethertype,
		Protocol: strings.ToLower(b.Protocol), PortMin: b.PortMin, PortMax: b.PortMax, RemoteIPPrefix: b.RemoteIPPrefix,
		RemoteGroupID: b.RemoteGroupID, Description: b.Description, Created: time.Now()}
	for _, o := range st.secRules.all() {
		if o.GroupID == x.GroupID && o.Direction == x.Direction && o.Ethertype == x.Ethertype && o.Protocol == x.Protocol &&
			eqIntPtr(o.PortMin, x.PortMin) && eqIntPtr(o.PortMax, x.PortMax) && o.RemoteIPPrefix == x.RemoteIPPrefix &&
			o.RemoteGroupID == x.RemoteGroupID {
			neutronError(w, http.StatusConflict, "SecurityGroupRuleExists", "Security group rule already exists. Rule id is %s.", o.ID)
			return
		}
	}
	st.secRules.add(x.ID, x)
	writeJSON(w, http.StatusCreated, map[string]any{"security_group_rule": ruleView(x)})
}

func eqIntPtr(a, b *int) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }
