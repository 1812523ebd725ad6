package cloudsim

import (
	"fmt"
	"net/http"
	"strings"
)

// Octavia's providers. "amphora" (and its old alias "octavia") takes every
// option the API has. "ovn" refuses what ovn-octavia-provider 3.0.0 (the
// Zed release Debian ships, read from its driver.py and constants.py and
// checked against the running service) refuses, with the same words:
// Octavia wraps a driver's UnsupportedOptionError into a 501
// ProviderUnsupportedOptionError, "Provider 'ovn' does not support a
// requested option: <the driver's message>", in its usual WSME body.
// What the provider accepts without applying (timeouts, connection_limit,
// session_persistence) is accepted here as well.

const (
	providerAmphora = "amphora"
	providerOctavia = "octavia" // deprecated alias of amphora
	providerOVN     = "ovn"
)

var enabledProviders = map[string]bool{providerAmphora: true, providerOctavia: true, providerOVN: true}

var (
	ovnProtocols  = map[string]bool{"TCP": true, "UDP": true, "SCTP": true}
	ovnAlgorithms = map[string]bool{"SOURCE_IP_PORT": true}
	// In this order in the driver's message.
	ovnMonitorTypes = []string{"UDP-CONNECT", "TCP"}
)

func providerList() []any {
	return []any{
		map[string]any{"name": providerAmphora, "description": "The Octavia Amphora driver (simulated)."},
		map[string]any{"name": providerOctavia, "description": "Deprecated alias of the Octavia Amphora driver."},
		map[string]any{"name": providerOVN, "description": "Octavia OVN driver (simulated)."},
	}
}

// unsupported is Octavia's answer to an option the provider's driver
// refuses.
func unsupported(provider, format string, args ...any) error {
	return octFail(http.StatusNotImplemented, "Provider '%s' does not support a requested option: %s", provider, fmt.Sprintf(format, args...))
}

// vipPortName is the VIP port's name in Neutron: the OVN provider makes
// the port itself.
func vipPortName(lb *lbObj) string {
	if lb.Provider == providerOVN {
		return "ovn-lb-vip-" + lb.ID
	}
	return "octavia-lb-" + lb.ID
}

// vipPortOwner is the VIP port's device_id and device_owner: Octavia's
// network driver marks the amphora provider's; the OVN provider creates
// its own with neither.
func vipPortOwner(lb *lbObj) (deviceID, owner string) {
	if lb.Provider == providerOVN {
		return "", ""
	}
	return "lb-" + lb.ID, "Octavia"
}

func (st *state) providerOf(lbID string) string {
	if lb, ok := st.lb.lbs.get(lbID); ok {
		return lb.Provider
	}
	return ""
}

// Which driver call reads what: a single-call create (loadbalancer_create)
// reads the listeners, every pool and its members but no health monitor;
// a listener create only the listener, a pool create only the pool. What
// a call does not read is stored by Octavia and never checked (nor made
// in OVN), so the simulator checks exactly what each call reads.

// checkGraphProvider checks a single-call create as loadbalancer_create
// does: the listeners, then the pools with their members.
func checkGraphProvider(provider string, ls []listenerReq, ps []poolReq) error {
	pools := append([]poolReq(nil), ps...)
	for _, l := range ls {
		if err := checkListenerProvider(provider, l.Protocol, l.AllowedCIDRs, false); err != nil {
			return err
		}
		if l.DefaultPool != nil {
			pools = append(pools, *l.DefaultPool)
		}
	}
	for _, p := range pools {
		if err := checkPoolProvider(provider, p.Protocol, algorithmOf(p)); err != nil {
			return err
		}
		for _, m := range p.Members {
			if err := checkMemberProvider(provider, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// algorithmOf is a pool's lb_algorithm, the simulator's default when unset.
func algorithmOf(b poolReq) string {
	if b.LBAlgorithm != nil {
		return *b.LBAlgorithm
	}
	return "ROUND_ROBIN"
}

// checkListenerProvider: the driver's listener_create checks the protocol,
// then allowed_cidrs; listener_update checks allowed_cidrs only.
func checkListenerProvider(provider, protocol string, cidrs []string, update bool) error {
	if provider != providerOVN {
		return nil
	}
	if !update && !ovnProtocols[protocol] {
		return unsupported(provider, "OVN provider does not support %s protocol", protocol)
	}
	if len(cidrs) > 0 {
		return unsupported(provider, "OVN provider does not support allowed_cidrs option")
	}
	return nil
}

// checkPoolProvider: pool_create and pool_update check the protocol, then
// the algorithm (an update only what it changes).
func checkPoolProvider(provider, protocol, algorithm string) error {
	if provider != providerOVN {
		return nil
	}
	if protocol != "" && !ovnProtocols[protocol] {
		return unsupported(provider, "OVN provider does not support %s protocol", protocol)
	}
	if algorithm != "" && !ovnAlgorithms[algorithm] {
		return unsupported(provider, "OVN provider does not support %s algorithm", algorithm)
	}
	return nil
}

// memberMonitorOptions says whether a member asks for a monitor address
// or port other than its own, which the OVN provider cannot do.
func memberMonitorOptions(b memberReq) bool {
	return (b.MonitorAddress != nil && *b.MonitorAddress != "") || (b.MonitorPort != nil && *b.MonitorPort != 0)
}

func checkMemberProvider(provider string, b memberReq) error {
	if provider == providerOVN && memberMonitorOptions(b) {
		return unsupported(provider, "OVN Load Balancer does not support different member monitor address or port.")
	}
	return nil
}

// checkBatchProvider: the driver's member_batch_update skips the members
// with monitor options and then refuses the batch naming them (a Python
// list of their IDs; the simulator has no IDs for new members, it names
// their addresses). The simulator changes nothing then.
func checkBatchProvider(provider string, members []memberReq) error {
	if provider != providerOVN {
		return nil
	}
	var skipped []string
	for _, b := range members {
		if memberMonitorOptions(b) {
			skipped = append(skipped, "'"+b.Address+"'")
		}
	}
	if len(skipped) > 0 {
		return unsupported(provider, "OVN provider does not support monitor options, so following members skipped: [%s]", strings.Join(skipped, ", "))
	}
	return nil
}

func checkMonitorProvider(provider, typ string) error {
	if provider != providerOVN {
		return nil
	}
	for _, t := range ovnMonitorTypes {
		if t == typ {
			return nil
		}
	}
	return unsupported(provider, "OVN provider does not support %s health monitor type. Supported types: %s", typ, strings.Join(ovnMonitorTypes, ", "))
}

// ovnListenerWedges says whether a listener create of protocol leaves an
// OVN-provider load balancer PENDING_UPDATE for good, as
// ovn-octavia-provider 3.0.0 does (seen on the real services): its
// listener_create looks the health check of the OVN row of the listener's
// protocol up by the wrong key, raises RowNotFound after writing the
// listener, and never reports a status. A monitor on a pool of another
// protocol is on another OVN row and does no harm, and so is one nested in
// the single-call create, which the driver never read; pool, member and
// monitor creates are not affected.
func ovnListenerWedges(st *state, lb *lbObj, protocol string) bool {
	if lb.Provider != providerOVN {
		return false
	}
	for _, p := range st.lb.pools.all() {
		if p.LBID != lb.ID || p.Protocol != protocol {
			continue
		}
		if m, ok := st.lb.monitors.get(p.MonitorID); ok && !m.notInProvider {
			return true
		}
	}
	return false
}

// ovnMonitorDeleteStrands says whether deleting the monitor of pool p
// leaves p PENDING_UPDATE for good, as ovn-octavia-provider 3.0.0 does
// (seen on the real services): its hm_delete reports ACTIVE the first
// pool, in key order ("pool_<id>"), of the OVN row of p's protocol, not
// p. The load balancer goes ACTIVE; p stays immutable.
func ovnMonitorDeleteStrands(st *state, lb *lbObj, p *poolObj) bool {
	if lb.Provider != providerOVN {
		return false
	}
	for _, q := range st.lb.pools.all() {
		if q.LBID == lb.ID && q.Protocol == p.Protocol && q.ID < p.ID && q.Prov != provPendingDelete {
			return true
		}
	}
	return false
}
