package loadbalancer

import (
	"context"
	"fmt"
	"slices"
	"strconv"
)

// Octavia locks a load balancer (PENDING_UPDATE) after every change, so the
// changes to an existing tree are a list of steps, each one API call, run
// one per sync. plan orders them so that each step leaves a working load
// balancer, and picks the call that does the most at once that Octavia
// takes: a new port is a listener, then its pool, its members in one batch
// and its monitor (outside a load balancer create Octavia takes one object
// per call, providers.go); a member change is one batch update per pool.

// step is one Octavia call of a plan.
type step struct {
	// What says what the step does, e.g. "create listener TCP/80"; tests
	// compare plans by it.
	What string
	do   func(ctx context.Context, o Octavia) error
	// listener is the protocol of the listener the step creates, monitor
	// the protocol of the pool it gives a health monitor ("" for other
	// steps): ovnmonitors.go orders these around a provider bug.
	listener, monitor string
	// clears is the protocol of the listener create a monitor delete
	// makes way for (ovnmonitors.go).
	clears string
	// unmonitors is the pool whose monitor the step deletes, for a monitor
	// the Service no longer wants (or wants of another type).
	unmonitors string
	// pool is the existing pool a monitor create (monitor set) is for: it
	// can run in the sync whose listener create failed (ovnmonitors.go).
	pool string
	// leaves is how many changes the step makes due in a later sync that
	// no plan shows yet (a restored monitor's tag, ovnmonitors.go).
	leaves int
}

func (s step) String() string { return s.What }

type listenerKey struct {
	protocol string
	port     int
}

func keyOf(protocol string, port int) string { return protocol + "/" + strconv.Itoa(port) }

// plan lists the steps that turn tree into spec.
func plan(lbID string, tree *Tree, spec Spec) []step {
	var steps []step
	want := map[listenerKey]ListenerSpec{}
	for _, l := range spec.Listeners {
		want[listenerKey{l.Protocol, l.Port}] = l
	}
	have := map[listenerKey]Listener{}
	for _, l := range tree.Listeners {
		have[listenerKey{l.Protocol, l.Port}] = l
	}
	// Removed ports first: they may free a port number a new one needs.
	for _, l := range tree.Listeners {
		if _, ok := want[listenerKey{l.Protocol, l.Port}]; ok {
			continue
		}
		if l.DefaultPoolID != "" {
			steps = append(steps, step{What: "delete pool of listener " + keyOf(l.Protocol, l.Port), do: func(ctx context.Context, o Octavia) error {
				return o.DeletePool(ctx, l.DefaultPoolID)
			}})
		}
		steps = append(steps, step{What: "delete listener " + keyOf(l.Protocol, l.Port), do: func(ctx context.Context, o Octavia) error {
			return o.DeleteListener(ctx, l.ID)
		}})
	}
	for _, l := range spec.Listeners {
		key := keyOf(l.Protocol, l.Port)
		cur, ok := have[listenerKey{l.Protocol, l.Port}]
		if !ok {
			steps = append(steps, step{What: "create listener " + key, do: func(ctx context.Context, o Octavia) error {
				return o.CreateListener(ctx, lbID, newListener(spec.Provider, l))
			}, listener: l.Protocol})
			steps = append(steps, followUps(spec.Provider, key, l.Pool, true)...)
			continue
		}
		if !listenerEqual(cur, l, len(spec.AdditionalVIPs) > 0) {
			steps = append(steps, step{What: "update listener " + key, do: func(ctx context.Context, o Octavia) error {
				return o.UpdateListener(ctx, cur.ID, l)
			}})
		}
		steps = append(steps, planPool(key, cur, tree.Pools[cur.DefaultPoolID], l.Pool, spec.Provider)...)
	}
	return steps
}

func planPool(key string, l Listener, cur *Pool, want PoolSpec, provider string) []step {
	if cur == nil {
		return append([]step{{What: "create pool of listener " + key, do: func(ctx context.Context, o Octavia) error {
			return o.CreatePool(ctx, l.ID, newPool(provider, want))
		}}}, followUps(provider, key, want, false)...)
	}
	if cur.Protocol != want.Protocol {
		// A pool's protocol is immutable (proxy protocol toggled): replace
		// the pool, members and monitor included, in two calls.
		return append([]step{
			{What: "delete pool of listener " + key + " (protocol " + cur.Protocol + ")", do: func(ctx context.Context, o Octavia) error {
				return o.DeletePool(ctx, cur.ID)
			}},
			{What: "create pool of listener " + key, do: func(ctx context.Context, o Octavia) error {
				return o.CreatePool(ctx, l.ID, newPool(provider, want))
			}},
		}, followUps(provider, key, want, false)...)
	}
	var steps []step
	if cur.Method != want.Method || cur.Persistence != want.Persistence {
		steps = append(steps, step{What: "update pool of listener " + key, do: func(ctx context.Context, o Octavia) error {
			return o.UpdatePool(ctx, cur.ID, want)
		}})
	}
	if !sameMembers(cur.Members, want.Members) {
		steps = append(steps, step{What: fmt.Sprintf("set %d members of listener %s", len(want.Members), key), do: func(ctx context.Context, o Octavia) error {
			return o.SetMembers(ctx, cur.ID, want.Members)
		}})
	}
	switch m := cur.Monitor; {
	case m == nil && want.Monitor != nil:
		steps = append(steps, step{What: "create monitor of listener " + key, do: func(ctx context.Context, o Octavia) error {
			return o.CreateMonitor(ctx, cur.ID, *want.Monitor)
		}, monitor: cur.Protocol, pool: cur.ID})
	case m != nil && want.Monitor == nil:
		steps = append(steps, step{What: "delete monitor of listener " + key, do: func(ctx context.Context, o Octavia) error {
			return o.DeleteMonitor(ctx, m.ID)
		}, unmonitors: cur.ID})
	case m != nil && m.Type != want.Monitor.Type:
		steps = append(steps,
			step{What: "delete monitor of listener " + key + " (type " + m.Type + ")", do: func(ctx context.Context, o Octavia) error {
				return o.DeleteMonitor(ctx, m.ID)
			}, unmonitors: cur.ID},
			step{What: "create monitor of listener " + key, do: func(ctx context.Context, o Octavia) error {
				return o.CreateMonitor(ctx, cur.ID, *want.Monitor)
			}, monitor: cur.Protocol, pool: cur.ID})
	case m != nil && !monitorEqual(m.MonitorSpec, *want.Monitor):
		steps = append(steps, step{What: "update monitor of listener " + key, do: func(ctx context.Context, o Octavia) error {
			return o.UpdateMonitor(ctx, m.ID, *want.Monitor)
		}})
	}
	return steps
}

func listenerEqual(cur Listener, want ListenerSpec, dualStack bool) bool {
	cidrs := sameStrings(cur.AllowedCIDRs, want.AllowedCIDRs) || len(want.AllowedCIDRs) == 0 && allowsAll(cur.AllowedCIDRs, dualStack)
	if cur.ConnLimit != want.ConnLimit || !cidrs || !l7Equal(cur, want) {
		return false
	}
	// Zero timeouts mean "Octavia's default": whatever is there is fine.
	t, w := cur.Timeouts, want.Timeouts
	for _, p := range [][2]int{{t.ClientData, w.ClientData}, {t.MemberConnect, w.MemberConnect}, {t.MemberData, w.MemberData}, {t.TCPInspect, w.TCPInspect}} {
		if p[1] != 0 && p[0] != p[1] {
			return false
		}
	}
	return true
}

// allowsAll says whether a listener's allowed_cidrs admit every client,
// as none do: the whole address space of each family the load balancer
// serves. The upstream CCM writes 0.0.0.0/0 on every listener of a Service
// without source ranges; rewriting that to nothing would change nothing but
// cost an update of every adopted listener. Octavia refuses a CIDR of a
// family the load balancer has no VIP of, so on a single-stack one any /0
// admits all; a dual-stack one needs both.
func allowsAll(cidrs []string, dualStack bool) bool {
	if len(cidrs) == 0 {
		return true
	}
	v4, v6 := false, false
	for _, c := range cidrs {
		switch c {
		case "0.0.0.0/0":
			v4 = true
		case "::/0":
			v6 = true
		default:
			return false
		}
	}
	return !dualStack || v4 && v6
}

func monitorEqual(cur, want MonitorSpec) bool {
	return cur.Delay == want.Delay && cur.Timeout == want.Timeout && cur.MaxRetries == want.MaxRetries &&
		cur.MaxRetriesDown == want.MaxRetriesDown && (want.URLPath == "" || cur.URLPath == want.URLPath)
}

// sameMembers compares the backends (address and port) only: that is what
// the status tree reports for free, and what a node change alters.
func sameMembers(cur, want []Member) bool {
	key := func(ms []Member) []string {
		out := make([]string, 0, len(ms))
		for _, m := range ms {
			out = append(out, m.Address+"/"+strconv.Itoa(m.Port))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(cur), key(want))
}

func sameStrings(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
