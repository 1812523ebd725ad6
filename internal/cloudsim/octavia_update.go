package cloudsim

import (
	"net/http"
	"strconv"
)

// Changes to existing Octavia children: updates, deletes and the batch
// member update that the CCM's service controller uses to sync pools.

func (s *Sim) updateChild(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var raw map[string]jsonRaw
		if err := decodeBody(r, &raw); err != nil || raw[kind] == nil {
			octaviaError(w, http.StatusBadRequest, "Invalid input for field/attribute %s.", kind)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		st, view, parents := s.child(kind, r.PathValue("id"), r.PathValue("pool"))
		if st == nil || !canWrite(r, st.ProjectID) {
			octaviaError(w, http.StatusNotFound, "%s %s not found.", octName(kind), r.PathValue("id"))
			return
		}
		lb, err := s.lockFor(st.LBID, append(parents, st)...)
		if err != nil {
			writeOctErr(w, err)
			return
		}
		if err := s.applyUpdate(kind, r.PathValue("id"), raw[kind]); err != nil {
			writeOctErr(w, err)
			return
		}
		st.mark(provPendingUpdate)
		s.commit(lb, parents)
		writeJSON(w, http.StatusOK, map[string]any{kind: view()})
	}
}

func (s *Sim) applyUpdate(kind, id string, body jsonRaw) error {
	o := s.state.lb
	bad := func(err error) error {
		return octFail(http.StatusBadRequest, "Invalid input for field/attribute %s. %v", kind, err)
	}
	switch kind {
	case "listener":
		var b listenerReq
		if err := unmarshal(body, &b); err != nil {
			return bad(err)
		}
		l := o.listeners.byID[id]
		if err := checkListenerProvider(s.state.providerOf(l.LBID), l.Protocol, b.AllowedCIDRs, true); err != nil {
			return err
		}
		if b.DefaultPoolID != nil {
			if *b.DefaultPoolID != "" {
				if p, ok := o.pools.get(*b.DefaultPoolID); !ok || p.LBID != l.LBID {
					return octFail(http.StatusNotFound, "Pool %s not found.", *b.DefaultPoolID)
				}
			}
			l.DefaultPoolID = *b.DefaultPoolID
		}
		setIf(&l.Name, b.Name)
		setIf(&l.Description, b.Description)
		setBool(&l.AdminUp, b.AdminStateUp)
		setIf(&l.ConnLimit, b.ConnLimit)
		if b.AllowedCIDRs != nil {
			l.AllowedCIDRs = b.AllowedCIDRs
		}
		ref, headers := l.TLSRef, l.InsertHeaders
		setIf(&ref, b.TLSRef)
		if b.InsertHeaders != nil {
			headers = b.InsertHeaders
		}
		if err := s.state.checkListenerTLS(l.ProjectID, l.Protocol, ref, headers); err != nil {
			return err
		}
		l.TLSRef, l.InsertHeaders = ref, headers
		if b.Tags != nil {
			l.Tags = b.Tags
		}
		for i, t := range []*int{b.TimeoutClient, b.TimeoutConnect, b.TimeoutMember, b.TimeoutTCP} {
			if t != nil {
				l.Timeouts[i] = *t
			}
		}
	case "pool":
		var b poolReq
		if err := unmarshal(body, &b); err != nil {
			return bad(err)
		}
		p := o.pools.byID[id]
		if b.LBAlgorithm != nil {
			if !lbAlgorithms[*b.LBAlgorithm] {
				return octFail(http.StatusBadRequest, "Invalid input for field/attribute lb_algorithm. Value: '%s'.", *b.LBAlgorithm)
			}
			if err := checkPoolProvider(s.state.providerOf(p.LBID), "", *b.LBAlgorithm); err != nil {
				return err
			}
			p.Algorithm = *b.LBAlgorithm
		}
		setIf(&p.Name, b.Name)
		setIf(&p.Description, b.Description)
		setBool(&p.AdminUp, b.AdminStateUp)
		setIf(&p.Persistence, b.Persistence)
		if b.Tags != nil {
			p.Tags = b.Tags
		}
	case "member":
		var b memberReq
		if err := unmarshal(body, &b); err != nil {
			return bad(err)
		}
		m := o.members.byID[id]
		if err := checkMemberProvider(s.state.providerOf(m.LBID), b); err != nil {
			return err
		}
		applyMember(m, b)
	case "healthmonitor":
		var b monitorReq
		if err := unmarshal(body, &b); err != nil {
			return bad(err)
		}
		m := o.monitors.byID[id]
		for _, f := range []struct {
			src *int
			dst *int
		}{{b.Delay, &m.Delay}, {b.Timeout, &m.Timeout}, {b.MaxRetries, &m.MaxRetries}, {b.MaxRetriesDown, &m.MaxRetriesDown}} {
			if f.src != nil {
				*f.dst = *f.src
			}
		}
		for _, f := range []struct {
			src *string
			dst *string
		}{{b.Name, &m.Name}, {b.HTTPMethod, &m.HTTPMethod}, {b.URLPath, &m.URLPath}, {b.ExpectedCodes, &m.ExpectedCodes}, {b.DomainName, &m.DomainName}} {
			if f.src != nil {
				*f.dst = *f.src
			}
		}
		setBool(&m.AdminUp, b.AdminStateUp)
		if b.Tags != nil {
			m.Tags = b.Tags
		}
	}
	return nil
}

func (s *Sim) deleteChild(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		st, _, parents := s.child(kind, r.PathValue("id"), r.PathValue("pool"))
		if st == nil || !canWrite(r, st.ProjectID) || st.Prov == provPendingDelete {
			octaviaError(w, http.StatusNotFound, "%s %s not found.", octName(kind), r.PathValue("id"))
			return
		}
		lb, err := s.lockFor(st.LBID, append(parents, st)...)
		if err != nil {
			writeOctErr(w, err)
			return
		}
		st.mark(provPendingDelete)
		if kind == "healthmonitor" {
			p := s.state.lb.pools.byID[s.state.lb.monitors.byID[st.ID].PoolID]
			p.stuck = ovnMonitorDeleteStrands(s.state, lb, p)
		}
		if kind == "pool" {
			o := s.state.lb
			for _, m := range o.members.all() {
				if m.PoolID == st.ID {
					m.mark(provPendingDelete)
				}
			}
			if m, ok := o.monitors.get(o.pools.byID[st.ID].MonitorID); ok {
				m.mark(provPendingDelete)
			}
		}
		s.commit(lb, parents)
		w.WriteHeader(http.StatusNoContent)
	}
}

// batchMembers replaces a pool's members: kept ones (same address and port)
// are updated, new ones created, missing ones deleted. Octavia answers 202.
func (s *Sim) batchMembers(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Members []memberReq `json:"members"`
	}
	if err := decodeBody(r, &req); err != nil {
		octaviaError(w, http.StatusBadRequest, "Invalid input for field/attribute members. %v", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, lb, err := s.poolLock(r.PathValue("pool"))
	if err != nil {
		writeOctErr(w, err)
		return
	}
	if err := checkBatchProvider(lb.Provider, req.Members); err != nil {
		writeOctErr(w, err)
		return
	}
	o := s.state.lb
	existing := map[string]*memberObj{}
	for _, m := range o.members.all() {
		if m.PoolID == p.ID {
			existing[m.Address+"/"+itoa(m.Port)] = m
		}
	}
	wanted := map[string]bool{}
	for _, b := range req.Members {
		key := b.Address + "/" + itoa(b.ProtocolPort)
		if wanted[key] {
			octaviaError(w, http.StatusBadRequest, "Duplicate member %s in the batch.", key)
			return
		}
		wanted[key] = true
	}
	for _, b := range req.Members {
		key := b.Address + "/" + itoa(b.ProtocolPort)
		if m, ok := existing[key]; ok {
			applyMember(m, b)
			m.mark(provPendingUpdate)
			continue
		}
		if _, err := s.newMember(p, b); err != nil {
			writeOctErr(w, err)
			return
		}
	}
	for key, m := range existing {
		if !wanted[key] {
			m.mark(provPendingDelete)
		}
	}
	s.commit(lb, []*lbStatus{&p.lbStatus})
	w.WriteHeader(http.StatusAccepted)
}

func itoa(i int) string { return strconv.Itoa(i) }

func applyMember(m *memberObj, b memberReq) {
	setIf(&m.Name, b.Name)
	setIf(&m.Weight, b.Weight)
	setBool(&m.AdminUp, b.AdminStateUp)
	setBool(&m.Backup, b.Backup)
	if b.MonitorAddress != nil {
		m.MonitorAddress = b.MonitorAddress
	}
	if b.MonitorPort != nil {
		m.MonitorPort = b.MonitorPort
	}
	if b.Tags != nil {
		m.Tags = b.Tags
	}
}
