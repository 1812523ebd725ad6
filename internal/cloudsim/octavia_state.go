package cloudsim

import (
	"fmt"
	"strings"
	"time"
)

// Octavia's provisioning state machine. Every change puts the load balancer
// and the touched objects into PENDING_*; after Options.OctaviaDelay they
// settle into ACTIVE (or ERROR when a "provisioning" fault fires; a Hang
// fault keeps them PENDING_*, for ever or for its HangFor) and
// PENDING_DELETE objects disappear. While an LB is PENDING_* it is immutable:
// any change under it is a 409, which is what makes clients poll.

const (
	provActive        = "ACTIVE"
	provError         = "ERROR"
	provPendingCreate = "PENDING_CREATE"
	provPendingUpdate = "PENDING_UPDATE"
	provPendingDelete = "PENDING_DELETE"
)

// lbStatus is the part every Octavia object shares.
type lbStatus struct {
	ID, Name, Description, ProjectID, LBID string
	AdminUp                                bool
	Prov, Oper                             string
	Tags                                   []string
	Created                                time.Time
	Updated                                *time.Time
	// stuck: the provider never reports this object back (an OVN monitor
	// delete on another pool, octavia_providers.go): PENDING_* for good.
	stuck bool
}

func (o *lbStatus) pending() bool { return strings.HasPrefix(o.Prov, "PENDING_") }

func (o *lbStatus) mark(prov string) {
	o.Prov = prov
	if prov != provPendingCreate {
		now := time.Now().UTC()
		o.Updated = &now
	}
}

type lbObj struct {
	lbStatus
	VIPAddress, VIPPortID, VIPSubnetID, VIPNetworkID string
	Provider, FlavorID, AZ                           string
	// ownPort: Octavia made the VIP port (and deletes it with the load
	// balancer); a vip_port_id the user gave stays theirs.
	ownPort bool
	// wedged: the provider never reported the last change (a listener
	// created beside a monitor, octavia_providers.go): PENDING_* for good.
	wedged         bool
	AdditionalVIPs []additionalVIP
}

type listenerObj struct {
	lbStatus
	Protocol, DefaultPoolID string
	Port, ConnLimit         int
	AllowedCIDRs            []string
	InsertHeaders           map[string]string
	TLSRef                  string // default_tls_container_ref
	Timeouts                [4]int // client data, member connect, member data, tcp inspect
}

type poolObj struct {
	lbStatus
	ListenerID, Protocol, Algorithm, MonitorID string
	Persistence                                map[string]any
}

type memberObj struct {
	lbStatus
	PoolID, Address, SubnetID string
	Port, Weight              int
	Backup                    bool
	MonitorAddress            *string
	MonitorPort               *int
}

type monitorObj struct {
	lbStatus
	PoolID, Type, HTTPMethod, URLPath, ExpectedCodes, DomainName string
	HTTPVersion                                                  *float64
	Delay, Timeout, MaxRetries, MaxRetriesDown                   int
	// notInProvider: stored by Octavia but never handed to the provider
	// (nested in an OVN single-call create).
	notInProvider bool
}

type octaviaState struct {
	lbs       *coll[lbObj]
	listeners *coll[listenerObj]
	pools     *coll[poolObj]
	members   *coll[memberObj]
	monitors  *coll[monitorObj]
}

func newOctaviaState() *octaviaState {
	return &octaviaState{lbs: newColl[lbObj](), listeners: newColl[listenerObj](), pools: newColl[poolObj](),
		members: newColl[memberObj](), monitors: newColl[monitorObj]()}
}

func newStatus(projectID, lbID, name, desc string, adminUp *flexBool, tags []string) lbStatus {
	up := adminUp == nil || bool(*adminUp)
	if tags == nil {
		tags = []string{}
	}
	return lbStatus{ID: newID(), Name: name, Description: desc, ProjectID: projectID, LBID: lbID, AdminUp: up,
		Prov: provPendingCreate, Oper: "OFFLINE", Tags: tags, Created: time.Now().UTC()}
}

// statuses returns pointers to every object of an LB, LB last.
func (o *octaviaState) statuses(lbID string) []*lbStatus {
	var out []*lbStatus
	for _, x := range o.listeners.all() {
		if x.LBID == lbID {
			out = append(out, &x.lbStatus)
		}
	}
	for _, x := range o.pools.all() {
		if x.LBID == lbID {
			out = append(out, &x.lbStatus)
		}
	}
	for _, x := range o.members.all() {
		if x.LBID == lbID {
			out = append(out, &x.lbStatus)
		}
	}
	for _, x := range o.monitors.all() {
		if x.LBID == lbID {
			out = append(out, &x.lbStatus)
		}
	}
	return out
}

// scheduleSettle finishes the LB's pending change after the Octavia delay.
func (s *Sim) scheduleSettle(lbID string) {
	time.AfterFunc(s.opts.OctaviaDelay, func() { s.settle(lbID) })
}

func (s *Sim) settle(lbID string) {
	fail, hang, hangFor := s.provisioningFault()
	switch {
	case hang && hangFor == 0:
		return // stuck PENDING_*, as with a lost amphora
	case hang:
		// Octavia's controller gives up on the lost amphora after its
		// retry timeout and ends the change.
		time.AfterFunc(hangFor, func() { s.finish(lbID, fail) })
		return
	}
	s.finish(lbID, fail)
}

// finish ends the LB's pending change: ACTIVE, or ERROR when fail.
func (s *Sim) finish(lbID string, fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state
	if st.closed {
		return
	}
	o := st.lb
	lb, ok := o.lbs.get(lbID)
	if !ok || !lb.pending() || lb.wedged {
		return
	}
	if lb.Prov == provPendingDelete {
		s.removeLB(lb)
		return
	}
	final := provActive
	if fail {
		final = provError
	}
	live := st.activeServerIPs()
	for _, x := range o.members.all() {
		if x.LBID == lbID && x.Prov == provPendingDelete {
			o.members.del(x.ID)
		}
	}
	for _, x := range o.monitors.all() {
		if x.LBID == lbID && x.Prov == provPendingDelete {
			o.monitors.del(x.ID)
			if p, ok := o.pools.get(x.PoolID); ok {
				p.MonitorID = ""
			}
		}
	}
	for _, x := range o.pools.all() {
		if x.LBID == lbID && x.Prov == provPendingDelete {
			s.removePool(x)
		}
	}
	for _, x := range o.listeners.all() {
		if x.LBID == lbID && x.Prov == provPendingDelete {
			o.listeners.del(x.ID)
			for _, p := range o.pools.all() {
				if p.ListenerID == x.ID {
					p.ListenerID = ""
				}
			}
		}
	}
	for _, x := range o.statuses(lbID) {
		if x.pending() && !x.stuck {
			x.Prov = final
		}
	}
	lb.Prov = final
	// Operating status follows from the settled tree.
	lb.Oper = onlineIf(lb.AdminUp && final == provActive)
	for _, x := range o.listeners.all() {
		if x.LBID == lbID {
			x.Oper = onlineIf(x.AdminUp && x.Prov == provActive)
		}
	}
	for _, p := range o.pools.all() {
		if p.LBID != lbID {
			continue
		}
		p.Oper = onlineIf(p.AdminUp && p.Prov == provActive)
		if m, ok := o.monitors.get(p.MonitorID); ok {
			m.Oper = onlineIf(m.AdminUp)
		}
		for _, m := range o.members.all() {
			if m.PoolID != p.ID {
				continue
			}
			switch {
			case !m.AdminUp:
				m.Oper = "OFFLINE"
			case p.MonitorID == "":
				m.Oper = "NO_MONITOR"
			case live[m.Address]:
				m.Oper = "ONLINE"
			default:
				m.Oper = "ERROR"
			}
		}
	}
}

func onlineIf(ok bool) string {
	if ok {
		return "ONLINE"
	}
	return "OFFLINE"
}

// activeServerIPs are the fixed IPs of ACTIVE servers: what a health monitor
// would find answering.
func (st *state) activeServerIPs() map[string]bool {
	out := map[string]bool{}
	for _, p := range st.ports.all() {
		if sv, ok := st.servers.get(p.DeviceID); ok && sv.Status == "ACTIVE" {
			for _, f := range p.FixedIPs {
				out[f.IP] = true
			}
		}
	}
	return out
}

func (s *Sim) removePool(p *poolObj) {
	o := s.state.lb
	for _, m := range o.members.all() {
		if m.PoolID == p.ID {
			o.members.del(m.ID)
		}
	}
	if p.MonitorID != "" {
		o.monitors.del(p.MonitorID)
	}
	for _, l := range o.listeners.all() {
		if l.DefaultPoolID == p.ID {
			l.DefaultPoolID = ""
		}
	}
	o.pools.del(p.ID)
}

func (s *Sim) removeLB(lb *lbObj) {
	o := s.state.lb
	for _, p := range o.pools.all() {
		if p.LBID == lb.ID {
			s.removePool(p)
		}
	}
	for _, l := range o.listeners.all() {
		if l.LBID == lb.ID {
			o.listeners.del(l.ID)
		}
	}
	if p, ok := s.state.ports.get(lb.VIPPortID); ok && lb.ownPort {
		s.state.deletePort(p.ID)
	}
	o.lbs.del(lb.ID)
}

// MarkLoadBalancerError is what an OpenStack admin does for a load
// balancer stuck PENDING_* after its octavia-worker died mid-change:
// Octavia's API has no call for it, the admin sets provisioning_status to
// ERROR in Octavia's database. The load balancer and its pending objects
// become ERROR, as a failed change leaves them.
//
// A load balancer that is not PENDING_* (ACTIVE over children stranded
// PENDING_*, StrandChildren) just becomes ERROR: the admin's update
// touches its row alone.
func (s *Sim) MarkLoadBalancerError(id string) error {
	s.mu.Lock()
	lb, ok := s.state.lb.lbs.get(id)
	pending := ok && lb.pending()
	if ok {
		lb.wedged = false
		if !pending {
			lb.mark(provError)
			lb.Oper = "OFFLINE"
		}
	}
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("load balancer %s: %w", id, ErrNotFound)
	}
	if pending {
		s.finish(id, true)
	}
	return nil
}

// StrandChildren leaves every listener, pool, member and monitor of load
// balancer id PENDING_CREATE for good while the load balancer stays as it
// is, as real Octavia did when a fully populated create ran while
// neutron-server or octavia-worker had just restarted (the worker marked
// only the load balancer ACTIVE). Every change under those children is
// then refused with 409. Only an admin's MarkLoadBalancerError (and a
// cascade delete after it) ends it; the children stay PENDING_CREATE, as
// an admin's update of the load balancer's row leaves them.
func (s *Sim) StrandChildren(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.state.lb.lbs.get(id); !ok {
		return fmt.Errorf("load balancer %s: %w", id, ErrNotFound)
	}
	for _, c := range s.state.lb.statuses(id) {
		c.Prov, c.stuck = provPendingCreate, true
	}
	return nil
}
