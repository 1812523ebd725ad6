package loadbalancer_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/loadbalancer"
)

// The invariants of TestOwnershipGenerative, checked on the snapshots
// before and after every step.

// classify gives every resource first seen in s its owner, for good: the
// operator's and upstream CCM X's were recorded when they were made; X's
// Manager tags its load balancers and groups and marks its floating IPs;
// everything else appeared through Y. A load balancer of X's that Y tags
// later stays X's.
func (w *world) classify(s *snapshot) {
	for id, l := range s.lbs {
		if _, ok := w.owner[id]; !ok {
			w.owner[id] = ownerY
			if slices.Contains(l.lb.Tags, "kube_cluster_uid="+uidX) {
				w.owner[id] = ownerX
			}
		}
	}
	for id, f := range s.fips {
		if _, ok := w.fipOwner[id]; !ok {
			w.fipOwner[id] = ownerY
			if strings.HasSuffix(f.Description, "[stackward kube_cluster_uid="+uidX+"]") {
				w.fipOwner[id] = ownerX
			}
		}
	}
	for id, g := range s.groups {
		if _, ok := w.groupOwner[id]; !ok {
			w.groupOwner[id] = ownerY
			if slices.Contains(g.g.Tags, "kube_cluster_uid="+uidX) || slices.ContainsFunc(w.xUIDs, func(uid string) bool { return strings.Contains(g.g.Name, uid) }) {
				w.groupOwner[id] = ownerX
			}
		}
	}
}

func namespaceOf(ref string) string { ns, _, _ := strings.Cut(ref, "/"); return ns }

func ownerTagOf(ref string) string {
	return "kube_service_" + genCluster + "_" + strings.Replace(ref, "/", "_", 1)
}

// consents says whether the operator (or a Service's creator) let
// Services of namespace ns share the load balancer.
func consents(tags []string, ns string) bool {
	return slices.Contains(tags, "kube_shared_with="+ns) || slices.Contains(tags, "kube_shared_with=*")
}

// mayChange says whether a sync of Y's Service ref may change Y's load
// balancer l: its own, one made for a Service of its namespace, or one
// shared with its namespace.
func mayChange(l lbSnap, ref string) bool {
	for _, t := range l.lb.Tags {
		if creator, ok := strings.CutPrefix(t, "kube_service="); ok {
			return creator == ref || namespaceOf(creator) == namespaceOf(ref) || consents(l.lb.Tags, namespaceOf(ref))
		}
	}
	return true
}

// withoutUser is l without what Service ref may add to a load balancer
// shared with it: its owner tag and its listeners.
func withoutUser(l lbSnap, refs ...string) string {
	c := lbSnap{lb: l.lb, listeners: map[string]string{}}
	c.lb.Tags = slices.Clone(l.lb.Tags)
	for id, s := range l.listeners {
		c.listeners[id] = s
	}
	for _, ref := range refs {
		tag := ownerTagOf(ref)
		c.lb.Tags = slices.DeleteFunc(c.lb.Tags, func(t string) bool { return t == tag })
		for id, s := range c.listeners {
			if strings.Contains(s, tag+"]") || strings.Contains(s, tag+" ") {
				delete(c.listeners, id)
			}
		}
	}
	return c.String()
}

// leaves says whether the only change from b to a is Service ref taking
// its listeners or its tag off a load balancer it may not join: leaving,
// never joining, is the way out of a share it should not have had. Not
// for X's: upstream's name tag there is the tag Y's Service of that name
// would have.
func leaves(b, a lbSnap, ref string) bool {
	tag := ownerTagOf(ref)
	if withoutUser(b, ref) != withoutUser(a, ref) || slices.Contains(a.lb.Tags, tag) && !slices.Contains(b.lb.Tags, tag) {
		return false
	}
	for id := range a.listeners {
		if _, ok := b.listeners[id]; !ok {
			return false
		}
	}
	return true
}

func (w *world) check(before, after *snapshot, s *step) []string {
	var v []string
	ns := namespaceOf(s.svc)
	// 1: nothing of the others changed.
	for id, b := range before.lbs {
		own := w.owner[id]
		if own == s.actor && (own != ownerY || s.svc == "" || mayChange(b, s.svc)) {
			continue
		}
		a, ok := after.lbs[id]
		if !ok {
			v = append(v, fmt.Sprintf("invariant 1: %s's load balancer was deleted: %s", own, b))
			continue
		}
		bs, as := b.String(), a.String()
		switch {
		case own == ownerOp && s.actor == ownerY && s.svc != "" && consents(b.lb.Tags, ns):
			bs, as = withoutUser(b, s.svc), withoutUser(a, s.svc)
		case own == ownerOp && s.actor == ownerY && s.svc == "":
			// A node change updates the members of every Y Service's
			// listeners, those on an operator's load balancer included; a
			// step acting on several Services (a rotation) may also see
			// one leave.
			var users []string
			for ref := range w.yEver {
				if consents(b.lb.Tags, namespaceOf(ref)) {
					users = append(users, ref)
				}
			}
			bs, as = withoutUser(b, users...), withoutUser(a, users...)
		case own != ownerX && s.actor == ownerY && s.svc != "" && leaves(b, a, s.svc):
			continue
		}
		if bs != as {
			who := string(own)
			if own == ownerY {
				who = "another namespace's (Y)"
			}
			v = append(v, fmt.Sprintf("invariant 1: %s load balancer changed by %s's step:\n      before %s\n      after  %s", who, s.actor, bs, as))
		}
	}
	for id, b := range before.fips {
		own := w.fipOwner[id]
		if own == s.actor {
			continue
		}
		a, ok := after.fips[id]
		switch {
		case !ok:
			v = append(v, fmt.Sprintf("invariant 1: %s's floating IP was released: %s", own, fipString(b)))
		case own == ownerOp && b.FloatingIP == w.opReservedFIP && s.actor == ownerY:
			// Reserved for a Service's spec.loadBalancerIP: it may be
			// attached and detached, never released.
		case fipString(a) != fipString(b):
			v = append(v, fmt.Sprintf("invariant 1: %s's floating IP changed: %s → %s", own, fipString(b), fipString(a)))
		}
	}
	for id, b := range before.groups {
		own := w.groupOwner[id]
		if own == s.actor {
			continue
		}
		if a, ok := after.groups[id]; !ok {
			v = append(v, fmt.Sprintf("invariant 1: %s's security group was deleted: %s", own, b))
		} else if a.String() != b.String() {
			v = append(v, fmt.Sprintf("invariant 1: %s's security group changed: %s → %s", own, b, a))
		}
	}
	others := func(sgs []string) []string {
		out := slices.DeleteFunc(slices.Clone(sgs), func(g string) bool { return w.groupOwner[g] == s.actor })
		slices.Sort(out)
		return out
	}
	for id, b := range before.ports {
		a, ok := after.ports[id]
		if !ok {
			if b.DeviceID != "" && slices.Contains(slices.Collect(maps.Values(w.c.servers)), b.DeviceID) || id == w.opFreePort {
				v = append(v, fmt.Sprintf("invariant 1: port %s (%s) was deleted", id, b.Name))
			}
			continue
		}
		if bo, ao := others(b.SecurityGroups), others(a.SecurityGroups); !slices.Equal(bo, ao) {
			v = append(v, fmt.Sprintf("invariant 1: security groups of port %s (device %s) not %s's changed: %v → %v", id, b.DeviceID, s.actor, bo, ao))
		}
	}
	// 5: Y's groups only on Y's nodes' own ports.
	for id, p := range after.ports {
		for _, g := range p.SecurityGroups {
			if w.groupOwner[g] == ownerY && p.DeviceID != w.c.servers["node-1"] && p.DeviceID != w.c.servers["node-2"] {
				v = append(v, fmt.Sprintf("invariant 5: Y's security group %s (%s) is on port %s (device %q, %v), not a node of Y's own port",
					g, after.groups[g].g.Name, id, p.DeviceID, p.FixedIPs))
			}
		}
	}
	v = append(v, w.checkKept(after)...)
	if len(w.ySvcs) == 0 {
		v = append(v, w.checkNothingOfYLeft(after)...)
	}
	return v
}

// checkKept is invariant 4, and records what the Services of Y ask to keep
// now: the floating IPs on their own load balancer with keep-floatingip,
// and the address spec.loadBalancerIP names. A
// Service that stops asking releases its claim (update); a deleted one
// keeps it for good.
func (w *world) checkKept(after *snapshot) []string {
	var v []string
	byAddr := map[string]bool{}
	for _, f := range after.fips {
		byAddr[f.FloatingIP] = true
	}
	for _, addr := range slices.Sorted(maps.Keys(w.kept)) {
		if !byAddr[addr] {
			v = append(v, fmt.Sprintf("invariant 4: floating IP %s, which Service uid %s asked to keep, was released", addr, w.kept[addr]))
			delete(w.kept, addr)
		}
	}
	for ref, g := range w.ySvcs {
		uid := string(g.svc.UID)
		if lbip := g.svc.Spec.LoadBalancerIP; lbip != "" && byAddr[lbip] && w.kept[lbip] == "" {
			w.kept[lbip] = uid
		}
		own, ok := after.lbs[w.lbOfIn(after, ref)]
		if !ok || g.svc.Annotations[loadbalancer.AnnotationKeepFloatingIP] != "true" {
			continue
		}
		for _, f := range after.fips {
			if f.PortID == own.lb.VipPortID && w.kept[f.FloatingIP] == "" {
				w.kept[f.FloatingIP] = uid
			}
		}
	}
	return v
}

func (w *world) lbOfIn(s *snapshot, ref string) string {
	for id, l := range s.lbs {
		if w.owner[id] == ownerY && slices.Contains(l.lb.Tags, "kube_service="+ref) {
			return id
		}
	}
	return ""
}

// checkNothingOfYLeft is invariant 2: Y has no Service left, and each
// delete has finished (the Service is gone), so nothing of Y may be left
// but the floating IPs it was asked to keep.
func (w *world) checkNothingOfYLeft(after *snapshot) []string {
	var v []string
	for id, l := range after.lbs {
		if w.owner[id] == ownerY {
			v = append(v, fmt.Sprintf("invariant 2: Y has no Service, its load balancer is left: %s", l))
		} else if slices.Contains(l.lb.Tags, "kube_cluster_uid="+uidY) {
			v = append(v, fmt.Sprintf("invariant 2: Y has no Service, its tag is left on %s's load balancer: %s", w.owner[id], l))
		}
	}
	for id, base := range w.opBaseline {
		if l := after.lbs[id]; l.String() != base {
			v = append(v, fmt.Sprintf("invariant 2: Y has no Service, the operator's load balancer is not as it was:\n      was %s\n      is  %s", base, l))
		}
	}
	for id, f := range after.fips {
		if w.fipOwner[id] == ownerY && w.kept[f.FloatingIP] == "" {
			v = append(v, fmt.Sprintf("invariant 2: Y has no Service, its floating IP is left: %s", fipString(f)))
		}
	}
	for id, g := range after.groups {
		if w.groupOwner[id] == ownerY {
			v = append(v, fmt.Sprintf("invariant 2: Y has no Service, its security group is left: %s", g))
		}
	}
	return v
}

// foreign is the second half of invariant 3: the ingress a Manager of
// cluster who reports for its Service ref is never the address of a load
// balancer the Service may not use (another cluster's, the operator's
// without consent, another namespace's of the same cluster).
func (w *world) foreign(who owner, ref, what string, st *corev1.LoadBalancerStatus) []string {
	var v []string
	if st == nil {
		return nil
	}
	for id, l := range w.snap.lbs {
		own := w.owner[id]
		if own == who && (who != ownerY || mayChange(l, ref)) || own == ownerOp && who == ownerY && consents(l.lb.Tags, namespaceOf(ref)) {
			continue
		}
		addrs := []string{l.lb.VipAddress}
		for _, f := range w.snap.fips {
			if f.PortID == l.lb.VipPortID {
				addrs = append(addrs, f.FloatingIP)
			}
		}
		for _, in := range st.Ingress {
			if ip := in.IP; slices.Contains(addrs, ip) {
				v = append(v, fmt.Sprintf("invariant 3: %s of %s's %s reports %s, an address of %s's load balancer %s", what, who, ref, ip, own, l))
			}
		}
	}
	return v
}

func ingressIPs(st *corev1.LoadBalancerStatus) string {
	var ips []string
	for _, in := range st.Ingress {
		ips = append(ips, in.IP)
	}
	slices.Sort(ips)
	return "[" + strings.Join(ips, " ") + "]"
}

func short(err error) string {
	s := err.Error()
	for _, sentinel := range []error{loadbalancer.ErrNotAdopted, loadbalancer.ErrSharing, loadbalancer.ErrImmutable, loadbalancer.ErrFloatingIPInUse} {
		if errors.Is(err, sentinel) {
			s = "[" + sentinel.Error()[:min(len(sentinel.Error()), 24)] + "…] " + s
		}
	}
	var inv *loadbalancer.InvalidAnnotationError
	if errors.As(err, &inv) {
		s = "[invalid annotation] " + s
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
