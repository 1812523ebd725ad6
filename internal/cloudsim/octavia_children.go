package cloudsim

import (
	"net/http"
	"net/netip"
)

// Octavia listeners, pools, members and health monitors. Every change goes
// through the LB lock: refused with 409 while the LB is PENDING_*, and puts
// the LB into PENDING_UPDATE until the change settles.

type listenerReq struct {
	Name           *string           `json:"name"`
	Description    *string           `json:"description"`
	Protocol       string            `json:"protocol"`
	ProtocolPort   int               `json:"protocol_port"`
	LoadbalancerID string            `json:"loadbalancer_id"`
	DefaultPoolID  *string           `json:"default_pool_id"`
	DefaultPool    *poolReq          `json:"default_pool"`
	ConnLimit      *int              `json:"connection_limit"`
	AdminStateUp   *flexBool         `json:"admin_state_up"`
	Tags           []string          `json:"tags"`
	AllowedCIDRs   []string          `json:"allowed_cidrs"`
	InsertHeaders  map[string]string `json:"insert_headers"`
	TLSRef         *string           `json:"default_tls_container_ref"`
	TimeoutClient  *int              `json:"timeout_client_data"`
	TimeoutConnect *int              `json:"timeout_member_connect"`
	TimeoutMember  *int              `json:"timeout_member_data"`
	TimeoutTCP     *int              `json:"timeout_tcp_inspect"`
}

type poolReq struct {
	Name           *string         `json:"name"`
	Description    *string         `json:"description"`
	Protocol       string          `json:"protocol"`
	LBAlgorithm    *string         `json:"lb_algorithm"`
	LoadbalancerID string          `json:"loadbalancer_id"`
	ListenerID     string          `json:"listener_id"`
	Persistence    *map[string]any `json:"session_persistence"`
	AdminStateUp   *flexBool       `json:"admin_state_up"`
	Tags           []string        `json:"tags"`
	Members        []memberReq     `json:"members"`
	Monitor        *monitorReq     `json:"healthmonitor"`
}

type memberReq struct {
	Name           *string   `json:"name"`
	Address        string    `json:"address"`
	ProtocolPort   int       `json:"protocol_port"`
	Weight         *int      `json:"weight"`
	SubnetID       string    `json:"subnet_id"`
	AdminStateUp   *flexBool `json:"admin_state_up"`
	Backup         *flexBool `json:"backup"`
	MonitorAddress *string   `json:"monitor_address"`
	MonitorPort    *int      `json:"monitor_port"`
	Tags           []string  `json:"tags"`
}

type monitorReq struct {
	Name           *string   `json:"name"`
	PoolID         string    `json:"pool_id"`
	Type           string    `json:"type"`
	Delay          *int      `json:"delay"`
	Timeout        *int      `json:"timeout"`
	MaxRetries     *int      `json:"max_retries"`
	MaxRetriesDown *int      `json:"max_retries_down"`
	HTTPMethod     *string   `json:"http_method"`
	URLPath        *string   `json:"url_path"`
	ExpectedCodes  *string   `json:"expected_codes"`
	HTTPVersion    *float64  `json:"http_version"`
	DomainName     *string   `json:"domain_name"`
	AdminStateUp   *flexBool `json:"admin_state_up"`
	Tags           []string  `json:"tags"`
}

func intOr(p *int, d int) int {
	if p == nil {
		return d
	}
	return *p
}

var (
	listenerProtocols = map[string]bool{"HTTP": true, "HTTPS": true, "TCP": true, "UDP": true, "TERMINATED_HTTPS": true, "SCTP": true, "PROMETHEUS": true}
	poolProtocols     = map[string]bool{"HTTP": true, "HTTPS": true, "TCP": true, "UDP": true, "PROXY": true, "PROXYV2": true, "SCTP": true}
	lbAlgorithms      = map[string]bool{"ROUND_ROBIN": true, "LEAST_CONNECTIONS": true, "SOURCE_IP": true, "SOURCE_IP_PORT": true}
	monitorTypes      = map[string]bool{"HTTP": true, "HTTPS": true, "PING": true, "TCP": true, "TLS-HELLO": true, "UDP-CONNECT": true, "SCTP": true}
)

func (s *Sim) newListener(lb *lbObj, b listenerReq) (*listenerObj, error) {
	o := s.state.lb
	if !listenerProtocols[b.Protocol] {
		return nil, octFail(http.StatusBadRequest, "Invalid input for field/attribute protocol. Value: '%s'.", b.Protocol)
	}
	if b.ProtocolPort < 1 || b.ProtocolPort > 65535 {
		return nil, octFail(http.StatusBadRequest, "Invalid input for field/attribute protocol_port. Value: '%d'.", b.ProtocolPort)
	}
	udp := b.Protocol == "UDP"
	for _, l := range o.listeners.all() {
		if l.LBID == lb.ID && l.Port == b.ProtocolPort && (l.Protocol == "UDP") == udp {
			return nil, octFail(http.StatusConflict, "Another Listener on this Load Balancer is already using protocol %s and protocol_port %d", l.Protocol, l.Port)
		}
	}
	if err := s.state.checkListenerTLS(lb.ProjectID, b.Protocol, str(b.TLSRef), b.InsertHeaders); err != nil {
		return nil, err
	}
	l := &listenerObj{lbStatus: newStatus(lb.ProjectID, lb.ID, str(b.Name), str(b.Description), b.AdminStateUp, b.Tags),
		Protocol: b.Protocol, Port: b.ProtocolPort, ConnLimit: intOr(b.ConnLimit, -1), AllowedCIDRs: b.AllowedCIDRs,
		InsertHeaders: b.InsertHeaders, TLSRef: str(b.TLSRef),
		Timeouts: [4]int{intOr(b.TimeoutClient, 50000), intOr(b.TimeoutConnect, 5000), intOr(b.TimeoutMember, 50000), intOr(b.TimeoutTCP, 0)}}
	if b.DefaultPoolID != nil && *b.DefaultPoolID != "" {
		p, ok := o.pools.get(*b.DefaultPoolID)
		if !ok || p.LBID != lb.ID {
			return nil, octFail(http.StatusNotFound, "Pool %s not found.", *b.DefaultPoolID)
		}
		l.DefaultPoolID = p.ID
	}
	o.listeners.add(l.ID, l)
	if b.DefaultPool != nil {
		p, err := s.newPool(lb, l.ID, *b.DefaultPool)
		if err != nil {
			o.listeners.del(l.ID)
			return nil, err
		}
		l.DefaultPoolID = p.ID
	}
	return l, nil
}

func (s *Sim) newPool(lb *lbObj, listenerID string, b poolReq) (*poolObj, error) {
	o := s.state.lb
	if !poolProtocols[b.Protocol] {
		return nil, octFail(http.StatusBadRequest, "Invalid input for field/attribute protocol. Value: '%s'.", b.Protocol)
	}
	alg := algorithmOf(b)
	if !lbAlgorithms[alg] {
		return nil, octFail(http.StatusBadRequest, "Invalid input for field/attribute lb_algorithm. Value: '%s'.", alg)
	}
	if listenerID == "" {
		listenerID = b.ListenerID
	}
	if listenerID != "" {
		l, ok := o.listeners.get(listenerID)
		if !ok || l.LBID != lb.ID {
			return nil, octFail(http.StatusNotFound, "Listener %s not found.", listenerID)
		}
		if l.DefaultPoolID != "" && b.ListenerID != "" {
			return nil, octFail(http.StatusConflict, "Listener %s is already using a default pool.", listenerID)
		}
		if err := checkPoolProtocol(l.Protocol, b.Protocol); err != nil {
			return nil, err
		}
	}
	p := &poolObj{lbStatus: newStatus(lb.ProjectID, lb.ID, str(b.Name), str(b.Description), b.AdminStateUp, b.Tags),
		ListenerID: listenerID, Protocol: b.Protocol, Algorithm: alg}
	if b.Persistence != nil {
		p.Persistence = *b.Persistence
	}
	o.pools.add(p.ID, p)
	if l, ok := o.listeners.get(listenerID); ok && l.DefaultPoolID == "" {
		l.DefaultPoolID = p.ID
	}
	for _, m := range b.Members {
		if _, err := s.newMember(p, m); err != nil {
			s.removePool(p)
			return nil, err
		}
	}
	if b.Monitor != nil {
		m, err := s.newMonitor(p, *b.Monitor)
		if err != nil {
			s.removePool(p)
			return nil, err
		}
		// Only a single-call create nests a monitor, and the OVN driver's
		// loadbalancer_create never reads it (octavia_providers.go).
		m.notInProvider = lb.Provider == providerOVN
	}
	return p, nil
}

func (s *Sim) newMember(p *poolObj, b memberReq) (*memberObj, error) {
	o := s.state.lb
	if _, err := netip.ParseAddr(b.Address); err != nil {
		return nil, octFail(http.StatusBadRequest, "Invalid input for field/attribute address. Value: '%s'.", b.Address)
	}
	if b.ProtocolPort < 1 || b.ProtocolPort > 65535 {
		return nil, octFail(http.StatusBadRequest, "Invalid input for field/attribute protocol_port. Value: '%d'.", b.ProtocolPort)
	}
	for _, m := range o.members.all() {
		if m.PoolID == p.ID && m.Address == b.Address && m.Port == b.ProtocolPort && m.Prov != provPendingDelete {
			return nil, octFail(http.StatusConflict, "Another member on this pool is already using ip %s on protocol_port %d", b.Address, b.ProtocolPort)
		}
	}
	m := &memberObj{lbStatus: newStatus(p.ProjectID, p.LBID, str(b.Name), "", b.AdminStateUp, b.Tags),
		PoolID: p.ID, Address: b.Address, Port: b.ProtocolPort, Weight: intOr(b.Weight, 1), SubnetID: b.SubnetID,
		MonitorAddress: b.MonitorAddress, MonitorPort: b.MonitorPort}
	setBool(&m.Backup, b.Backup)
	o.members.add(m.ID, m)
	return m, nil
}

func (s *Sim) newMonitor(p *poolObj, b monitorReq) (*monitorObj, error) {
	o := s.state.lb
	if !monitorTypes[b.Type] {
		return nil, octFail(http.StatusBadRequest, "Invalid input for field/attribute type. Value: '%s'.", b.Type)
	}
	if b.Delay == nil || b.Timeout == nil || b.MaxRetries == nil {
		return nil, octFail(http.StatusBadRequest, "Invalid input for field/attribute: delay, timeout and max_retries are mandatory.")
	}
	if p.MonitorID != "" {
		return nil, octFail(http.StatusConflict, "This Octavia pool %s already has a health monitor", p.ID)
	}
	m := &monitorObj{lbStatus: newStatus(p.ProjectID, p.LBID, str(b.Name), "", b.AdminStateUp, b.Tags),
		PoolID: p.ID, Type: b.Type, Delay: *b.Delay, Timeout: *b.Timeout, MaxRetries: *b.MaxRetries,
		MaxRetriesDown: intOr(b.MaxRetriesDown, 3), HTTPVersion: b.HTTPVersion, DomainName: str(b.DomainName)}
	if b.Type == "HTTP" || b.Type == "HTTPS" {
		m.HTTPMethod, m.URLPath, m.ExpectedCodes = "GET", "/", "200"
		if b.HTTPMethod != nil {
			m.HTTPMethod = *b.HTTPMethod
		}
		if b.URLPath != nil {
			m.URLPath = *b.URLPath
		}
		if b.ExpectedCodes != nil {
			m.ExpectedCodes = *b.ExpectedCodes
		}
	}
	o.monitors.add(m.ID, m)
	p.MonitorID = m.ID
	return m, nil
}

func (s *Sim) routesLBChildren(h routeFunc) {
	h("GET /lbaas/listeners", "listeners.list", listenerRes.list(s, ofLB(listenerRes.store)))
	h("GET /lbaas/pools", "pools.list", poolRes.list(s, ofLB(poolRes.store)))
	h("GET /lbaas/healthmonitors", "healthmonitors.list", monitorRes.list(s, ofLB(monitorRes.store)))
	h("GET /lbaas/pools/{pool}/members", "members.list", memberRes.list(s, membersOfPool))
	h("GET /lbaas/listeners/{id}", "listeners.get", listenerRes.show(s))
	h("GET /lbaas/pools/{id}", "pools.get", poolRes.show(s))
	h("GET /lbaas/healthmonitors/{id}", "healthmonitors.get", monitorRes.show(s))
	h("GET /lbaas/pools/{pool}/members/{id}", "members.get", s.getChild("member"))
	h("POST /lbaas/listeners", "listeners.create", s.createListener())
	h("POST /lbaas/pools", "pools.create", s.createPool())
	h("POST /lbaas/healthmonitors", "healthmonitors.create", s.createMonitor())
	h("POST /lbaas/pools/{pool}/members", "members.create", s.createMember())
	h("PUT /lbaas/pools/{pool}/members", "members.batch_update", s.batchMembers)
	h("PUT /lbaas/listeners/{id}", "listeners.update", s.updateChild("listener"))
	h("PUT /lbaas/pools/{id}", "pools.update", s.updateChild("pool"))
	h("PUT /lbaas/healthmonitors/{id}", "healthmonitors.update", s.updateChild("healthmonitor"))
	h("PUT /lbaas/pools/{pool}/members/{id}", "members.update", s.updateChild("member"))
	h("DELETE /lbaas/listeners/{id}", "listeners.delete", s.deleteChild("listener"))
	h("DELETE /lbaas/pools/{id}", "pools.delete", s.deleteChild("pool"))
	h("DELETE /lbaas/healthmonitors/{id}", "healthmonitors.delete", s.deleteChild("healthmonitor"))
	h("DELETE /lbaas/pools/{pool}/members/{id}", "members.delete", s.deleteChild("member"))
}

// child finds an Octavia child object by kind: its status, JSON view, and
// the statuses of its parents (which go PENDING_UPDATE with it).
func (s *Sim) child(kind, id, pool string) (st *lbStatus, view func() map[string]any, parents []*lbStatus) {
	o := s.state.lb
	switch kind {
	case "listener":
		if x, ok := o.listeners.get(id); ok {
			return &x.lbStatus, func() map[string]any { return s.listenerView(x) }, nil
		}
	case "pool":
		if x, ok := o.pools.get(id); ok {
			if l, ok := o.listeners.get(x.ListenerID); ok {
				parents = append(parents, &l.lbStatus)
			}
			return &x.lbStatus, func() map[string]any { return s.poolView(x) }, parents
		}
	case "member":
		if x, ok := o.members.get(id); ok && x.PoolID == pool {
			p := o.pools.byID[x.PoolID]
			return &x.lbStatus, func() map[string]any { return s.memberView(x) }, []*lbStatus{&p.lbStatus}
		}
	case "healthmonitor":
		if x, ok := o.monitors.get(id); ok {
			p := o.pools.byID[x.PoolID]
			return &x.lbStatus, func() map[string]any { return s.monitorView(x) }, []*lbStatus{&p.lbStatus}
		}
	}
	return nil, nil, nil
}

func octName(kind string) string {
	return map[string]string{"listener": "Listener", "pool": "Pool", "member": "Member", "healthmonitor": "Health Monitor"}[kind]
}

func (s *Sim) getChild(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.RLock()
		defer s.mu.RUnlock()
		st, view, _ := s.child(kind, r.PathValue("id"), r.PathValue("pool"))
		if st == nil || !canRead(r, st.ProjectID) {
			octaviaError(w, http.StatusNotFound, "%s %s not found.", octName(kind), r.PathValue("id"))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{kind: view()})
	}
}

// lockFor takes the LB lock for a change: 409 while it is PENDING_*.
func (s *Sim) lockFor(lbID string, parents ...*lbStatus) (*lbObj, error) {
	lb, err := s.mutableLB(lbID)
	if err != nil {
		return nil, err
	}
	for _, p := range parents {
		if p.pending() {
			return nil, octFail(http.StatusConflict, "Load Balancer %s is immutable and cannot be updated.", lbID)
		}
	}
	return lb, nil
}

// commit marks a change pending and schedules its settling.
func (s *Sim) commit(lb *lbObj, parents []*lbStatus) {
	for _, p := range parents {
		p.mark(provPendingUpdate)
	}
	lb.mark(provPendingUpdate)
	s.scheduleSettle(lb.ID)
}

// createChild answers POST of an Octavia child: the body {rs.one: B}; lock
// takes the load balancer's lock (409 while it is PENDING_*) and names the
// parents that go PENDING_UPDATE with it; create makes the object.
func createChild[T, B any](s *Sim, rs *resource[T], lock func(r *http.Request, st *state, b *B) (*lbObj, []*lbStatus, error),
	create func(st *state, lb *lbObj, parents []*lbStatus, b *B) (*T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var raw map[string]jsonRaw
		var b B
		if err := decodeBody(r, &raw); err != nil || raw[rs.one] == nil || unmarshal(raw[rs.one], &b) != nil {
			octaviaError(w, http.StatusBadRequest, "Invalid input for field/attribute %s.", rs.one)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		lb, parents, err := lock(r, s.state, &b)
		var x *T
		if err == nil {
			x, err = create(s.state, lb, parents, &b)
		}
		if err != nil {
			writeOctErr(w, err)
			return
		}
		s.commit(lb, parents)
		writeJSON(w, http.StatusCreated, map[string]any{rs.one: rs.view(s, x)})
	}
}

func (s *Sim) createListener() http.HandlerFunc {
	return createChild(s, listenerRes, func(_ *http.Request, _ *state, b *listenerReq) (*lbObj, []*lbStatus, error) {
		lb, err := s.lockFor(b.LoadbalancerID)
		return lb, nil, err
	}, func(_ *state, lb *lbObj, _ []*lbStatus, b *listenerReq) (*listenerObj, error) {
		if err := checkListenerProvider(lb.Provider, b.Protocol, b.AllowedCIDRs, false); err != nil {
			return nil, err
		}
		if b.DefaultPool != nil {
			return nil, nestedChildren()
		}
		l, err := s.newListener(lb, *b)
		if err == nil && ovnListenerWedges(s.state, lb, l.Protocol) {
			lb.wedged = true
		}
		return l, err
	})
}

func (s *Sim) createPool() http.HandlerFunc {
	return createChild(s, poolRes, func(_ *http.Request, st *state, b *poolReq) (*lbObj, []*lbStatus, error) {
		lbID := b.LoadbalancerID
		var parents []*lbStatus
		if l, ok := st.lb.listeners.get(b.ListenerID); ok {
			lbID = l.LBID
			parents = append(parents, &l.lbStatus)
		}
		lb, err := s.lockFor(lbID, parents...)
		return lb, parents, err
	}, func(_ *state, lb *lbObj, _ []*lbStatus, b *poolReq) (*poolObj, error) {
		if err := checkPoolProvider(lb.Provider, b.Protocol, algorithmOf(*b)); err != nil {
			return nil, err
		}
		if len(b.Members) > 0 || b.Monitor != nil {
			return nil, nestedChildren()
		}
		return s.newPool(lb, "", *b)
	})
}

// nestedChildren is real Octavia's (11, Zed) answer to a listener create
// with a nested default_pool, or a pool create with nested members or a
// health monitor: only a load balancer create takes a graph, and these
// single-object creates hand the nested dicts to the database model. The
// listener's answer was seen against the real service (e2e/realcloud); the
// pool's is read from the same code path in Octavia 11's API.
func nestedChildren() error {
	return octFail(http.StatusInternalServerError, "'dict' object has no attribute '_sa_instance_state'")
}

func (s *Sim) poolLock(poolID string) (*poolObj, *lbObj, error) {
	p, ok := s.state.lb.pools.get(poolID)
	if !ok {
		return nil, nil, octFail(http.StatusNotFound, "Pool %s not found.", poolID)
	}
	lb, err := s.lockFor(p.LBID, &p.lbStatus)
	return p, lb, err
}

// poolParent is the lock of a member or monitor: that of its pool's load
// balancer, with the pool as the parent.
func (s *Sim) poolParent(poolID string) (*lbObj, []*lbStatus, error) {
	p, lb, err := s.poolLock(poolID)
	if err != nil {
		return nil, nil, err
	}
	return lb, []*lbStatus{&p.lbStatus}, nil
}

func (s *Sim) createMember() http.HandlerFunc {
	return createChild(s, memberRes, func(r *http.Request, _ *state, _ *memberReq) (*lbObj, []*lbStatus, error) {
		return s.poolParent(r.PathValue("pool"))
	}, func(st *state, lb *lbObj, parents []*lbStatus, b *memberReq) (*memberObj, error) {
		if err := checkMemberProvider(lb.Provider, *b); err != nil {
			return nil, err
		}
		return s.newMember(st.lb.pools.byID[parents[0].ID], *b)
	})
}

func (s *Sim) createMonitor() http.HandlerFunc {
	return createChild(s, monitorRes, func(_ *http.Request, _ *state, b *monitorReq) (*lbObj, []*lbStatus, error) {
		return s.poolParent(b.PoolID)
	}, func(st *state, lb *lbObj, parents []*lbStatus, b *monitorReq) (*monitorObj, error) {
		if err := checkMonitorProvider(lb.Provider, b.Type); err != nil {
			return nil, err
		}
		return s.newMonitor(st.lb.pools.byID[parents[0].ID], *b)
	})
}
