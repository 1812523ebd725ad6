package cloudsim

import "time"

// Octavia's JSON views: unset optional values are null as in Octavia, and
// children are referenced as [{"id": ...}] except in the answer to a fully
// populated create, which nests whole objects.

func octTS(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC().Format(octaviaTS)
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func idRefs(ids []string) []any {
	out := []any{}
	for _, id := range ids {
		out = append(out, map[string]any{"id": id})
	}
	return out
}

func (o *lbStatus) common() map[string]any {
	created := o.Created
	return map[string]any{
		"id": o.ID, "name": o.Name, "description": o.Description, "project_id": o.ProjectID,
		"admin_state_up": o.AdminUp, "provisioning_status": o.Prov, "operating_status": o.Oper,
		"tags": append([]string{}, o.Tags...), "created_at": octTS(&created), "updated_at": octTS(o.Updated),
	}
}

func (s *Sim) lbView(lb *lbObj) map[string]any {
	o := s.state.lb
	v := lb.common()
	var ls, ps []string
	for _, l := range o.listeners.all() {
		if l.LBID == lb.ID {
			ls = append(ls, l.ID)
		}
	}
	for _, p := range o.pools.all() {
		if p.LBID == lb.ID {
			ps = append(ps, p.ID)
		}
	}
	v["listeners"], v["pools"] = idRefs(ls), idRefs(ps)
	v["vip_address"], v["vip_port_id"], v["vip_subnet_id"], v["vip_network_id"] = lb.VIPAddress, lb.VIPPortID, lb.VIPSubnetID, lb.VIPNetworkID
	v["vip_qos_policy_id"], v["vip_vnic_type"], v["vip_sg_ids"] = nil, "normal", nil
	v["provider"], v["flavor_id"], v["availability_zone"] = lb.Provider, nullIfEmpty(lb.FlavorID), nullIfEmpty(lb.AZ)
	v["additional_vips"] = additionalVIPsView(lb.AdditionalVIPs)
	return v
}

func (s *Sim) listenerView(l *listenerObj) map[string]any {
	v := l.common()
	v["protocol"], v["protocol_port"], v["connection_limit"] = l.Protocol, l.Port, l.ConnLimit
	v["default_pool_id"] = nullIfEmpty(l.DefaultPoolID)
	v["loadbalancers"] = idRefs([]string{l.LBID})
	v["l7policies"] = []any{}
	v["default_tls_container_ref"], v["sni_container_refs"] = nullIfEmpty(l.TLSRef), []string{}
	ih := map[string]string{}
	for k, x := range l.InsertHeaders {
		ih[k] = x
	}
	v["insert_headers"] = ih
	v["timeout_client_data"], v["timeout_member_connect"] = l.Timeouts[0], l.Timeouts[1]
	v["timeout_member_data"], v["timeout_tcp_inspect"] = l.Timeouts[2], l.Timeouts[3]
	var cidrs any
	if l.AllowedCIDRs != nil {
		cidrs = append([]string{}, l.AllowedCIDRs...)
	}
	v["allowed_cidrs"] = cidrs
	v["tls_ciphers"], v["tls_versions"], v["alpn_protocols"] = nil, nil, nil
	v["client_ca_tls_container_ref"], v["client_authentication"], v["client_crl_container_ref"] = nil, "NONE", nil
	return v
}

func (s *Sim) poolView(p *poolObj) map[string]any {
	o := s.state.lb
	v := p.common()
	v["protocol"], v["lb_algorithm"] = p.Protocol, p.Algorithm
	if lb, ok := o.lbs.get(p.LBID); ok {
		v["provider"] = lb.Provider
	}
	var sp any
	if p.Persistence != nil {
		sp = p.Persistence
	}
	v["session_persistence"] = sp
	v["loadbalancers"] = idRefs([]string{p.LBID})
	var ls []string
	for _, l := range o.listeners.all() {
		if l.ID == p.ListenerID || l.DefaultPoolID == p.ID {
			ls = append(ls, l.ID)
		}
	}
	v["listeners"] = idRefs(ls)
	var ms []string
	for _, m := range o.members.all() {
		if m.PoolID == p.ID {
			ms = append(ms, m.ID)
		}
	}
	v["members"] = idRefs(ms)
	v["healthmonitor_id"] = nullIfEmpty(p.MonitorID)
	v["tls_enabled"], v["tls_container_ref"], v["ca_tls_container_ref"], v["crl_container_ref"] = false, nil, nil, nil
	v["tls_ciphers"], v["tls_versions"], v["alpn_protocols"] = nil, nil, nil
	return v
}

func (s *Sim) memberView(m *memberObj) map[string]any {
	v := m.common()
	v["address"], v["protocol_port"], v["weight"], v["backup"] = m.Address, m.Port, m.Weight, m.Backup
	v["subnet_id"] = nullIfEmpty(m.SubnetID)
	var ma, mp any
	if m.MonitorAddress != nil {
		ma = *m.MonitorAddress
	}
	if m.MonitorPort != nil {
		mp = *m.MonitorPort
	}
	v["monitor_address"], v["monitor_port"] = ma, mp
	v["pool_id"] = m.PoolID
	return v
}

func (s *Sim) monitorView(m *monitorObj) map[string]any {
	v := m.common()
	v["type"], v["delay"], v["timeout"], v["max_retries"], v["max_retries_down"] = m.Type, m.Delay, m.Timeout, m.MaxRetries, m.MaxRetriesDown
	v["http_method"], v["url_path"], v["expected_codes"] = nullIfEmpty(m.HTTPMethod), nullIfEmpty(m.URLPath), nullIfEmpty(m.ExpectedCodes)
	var hv any
	if m.HTTPVersion != nil {
		hv = *m.HTTPVersion
	}
	v["http_version"], v["domain_name"] = hv, nullIfEmpty(m.DomainName)
	v["pools"] = idRefs([]string{m.PoolID})
	return v
}

// fullPoolView nests members and the health monitor, for fully populated answers.
func (s *Sim) fullPoolView(p *poolObj) map[string]any {
	o := s.state.lb
	v := s.poolView(p)
	var ms []any
	for _, m := range o.members.all() {
		if m.PoolID == p.ID {
			ms = append(ms, s.memberView(m))
		}
	}
	if ms == nil {
		ms = []any{}
	}
	v["members"] = ms
	var hm any
	if m, ok := o.monitors.get(p.MonitorID); ok {
		hm = s.monitorView(m)
	}
	v["healthmonitor"] = hm
	return v
}

func (s *Sim) fullLBView(lb *lbObj) map[string]any {
	o := s.state.lb
	v := s.lbView(lb)
	ls, ps := []any{}, []any{}
	for _, l := range o.listeners.all() {
		if l.LBID == lb.ID {
			lv := s.listenerView(l)
			if p, ok := o.pools.get(l.DefaultPoolID); ok {
				lv["default_pool"] = s.fullPoolView(p)
			}
			ls = append(ls, lv)
		}
	}
	for _, p := range o.pools.all() {
		if p.LBID == lb.ID {
			ps = append(ps, s.fullPoolView(p))
		}
	}
	v["listeners"], v["pools"] = ls, ps
	return v
}

// statusTree is GET /loadbalancers/{id}/status.
func (s *Sim) statusTree(lb *lbObj) map[string]any {
	o := s.state.lb
	st := func(x *lbStatus) map[string]any {
		return map[string]any{"id": x.ID, "name": x.Name, "provisioning_status": x.Prov, "operating_status": x.Oper}
	}
	var ls []any
	for _, l := range o.listeners.all() {
		if l.LBID != lb.ID {
			continue
		}
		lv := st(&l.lbStatus)
		var ps []any
		for _, p := range o.pools.all() {
			if p.ID != l.DefaultPoolID && p.ListenerID != l.ID {
				continue
			}
			pv := st(&p.lbStatus)
			var ms []any
			for _, m := range o.members.all() {
				if m.PoolID == p.ID {
					mv := st(&m.lbStatus)
					mv["address"], mv["protocol_port"] = m.Address, m.Port
					ms = append(ms, mv)
				}
			}
			pv["members"] = ms
			if m, ok := o.monitors.get(p.MonitorID); ok {
				hv := st(&m.lbStatus)
				hv["type"] = m.Type
				pv["health_monitor"] = hv
			}
			ps = append(ps, pv)
		}
		lv["pools"] = ps
		ls = append(ls, lv)
	}
	root := st(&lb.lbStatus)
	root["listeners"] = ls
	return map[string]any{"statuses": map[string]any{"loadbalancer": root}}
}
