package loadbalancer_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// A seeded, bounded, generative test of who owns what. Two clusters of one
// name share a project: X (Stackward X and, before it, upstream CCM X) and
// Y, Stackward under test, whose namespace users create, change and delete
// Services with every ownership-relevant annotation pointing at every
// party's resources, while Y's CCM restarts and fails over, its nodes lie
// about their addresses, the cloud fails calls and the operator rotates Y's
// password while Keystone is failing. Each Service is driven
// as the service controller drives it. After every step the cloud is read
// through the raw clients and these must hold:
//
//  1. nothing of X or the operator is changed or deleted by anyone else
//     (load balancers with tags, listeners, members; floating IPs with their
//     port; security groups and which ports carry them), and a Service of Y
//     changes no load balancer of another namespace it may not share;
//  2. once Y has no Service left, nothing of Y is left;
//  3. a Service's ingress changes only through its own spec, and is never
//     an address of a load balancer that is not the Service's to use;
//  4. a floating IP someone asked to keep is never released;
//  5. Y's security groups are only on its member nodes' own server ports;
//  6. while a rotation of Y's password is pending (Keystone failing, then
//     the old password refused) nothing changes, an authentication failure
//     is never taken for "not found"; once Keystone answers again Y's
//     credential watch takes the new password within a check, Y's syncs
//     authenticate, and Y's clients are on the new password (the old one
//     is refused, and they re-authenticate after their tokens are revoked).
//
// STACKWARD_OWNERSHIP_SEEDS and STACKWARD_OWNERSHIP_STEPS set the budget
// (make ownership runs a long one); STACKWARD_OWNERSHIP_SEED replays one;
// STACKWARD_OWNERSHIP_ALL=1 reports every violated step instead of the
// first, to catalogue what a change breaks.
func TestOwnershipGenerative(t *testing.T) {
	seeds, steps := envInt("STACKWARD_OWNERSHIP_SEEDS", 3), envInt("STACKWARD_OWNERSHIP_STEPS", 25)
	first := int64(1)
	if s := os.Getenv("STACKWARD_OWNERSHIP_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("STACKWARD_OWNERSHIP_SEED=%q: %v", s, err)
		}
		first, seeds = n, 1
	}
	for seed := first; seed < first+int64(seeds); seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) { runOwnership(t, seed, steps) })
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

type owner string

const (
	ownerX  owner = "X"
	ownerOp owner = "operator"
	ownerY  owner = "Y"
)

// genSvc is a Service and what the service controller knows of it.
type genSvc struct {
	svc      *corev1.Service
	deleting bool
	// specGen counts the changes of its spec; statusGen is the specGen
	// its status was written under (-1: none yet).
	specGen, statusGen int
}

type world struct {
	c          *cloud
	seed       int64
	gen        *rand.Rand // the steps: the same for a seed every run
	mX         *loadbalancer.Manager
	mY         [2]*loadbalancer.Manager
	lying      string // the address node-2 reports instead of its own
	ySvcs      map[string]*genSvc
	yEver      map[string]bool // every Service Y ever had, deleted ones too
	xSvcs      map[string]*genSvc
	xUIDs      []string
	nextUID    int
	owner      map[string]owner // load balancer ID →
	fipOwner   map[string]owner
	groupOwner map[string]owner
	upstreamX  map[string]string // X's Service → the load balancer upstream CCM X made
	opLB       map[string]string
	opBaseline map[string]string // the operator's load balancers as made
	// upstreamXFIP, opReservedFIP are addresses; opFreePort a port ID.
	upstreamXFIP  []string
	opReservedFIP string
	opFreePort    string
	kept          map[string]string // floating IP address → UID of the Service that asked to keep it
	snap          *snapshot
	log           []string
	// syncErr is the error the last syncY ended with (nil: none).
	syncErr error
}

func runOwnership(t *testing.T, seed int64, steps int) {
	w := &world{c: startCloud(t), seed: seed, gen: rand.New(rand.NewSource(seed)),
		ySvcs: map[string]*genSvc{}, yEver: map[string]bool{}, xSvcs: map[string]*genSvc{}, owner: map[string]owner{}, fipOwner: map[string]owner{},
		groupOwner: map[string]owner{}, upstreamX: map[string]string{}, opLB: map[string]string{}, kept: map[string]string{}}
	pre, err := w.c.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for id := range pre.lbs {
		w.owner[id] = ownerOp
	}
	for id := range pre.fips {
		w.fipOwner[id] = ownerOp
	}
	for id := range pre.groups {
		w.groupOwner[id] = ownerOp
	}
	w.mX = w.c.manager(uidX)
	w.mY = [2]*loadbalancer.Manager{w.c.manager(uidY), w.c.manager(uidY)}
	w.setupOthers(t)
	if w.snap, err = w.c.snapshot(); err != nil {
		t.Fatal(err)
	}
	w.classify(w.snap)
	w.opBaseline = map[string]string{}
	for _, id := range w.opLB {
		w.opBaseline[id] = w.snap.lbs[id].String()
	}
	start := time.Now()
	for i := range steps {
		s := w.nextStep()
		rt := rand.New(rand.NewSource(seed*100003 + int64(i)))
		if s.fault != nil {
			if err := w.c.sim.SetFault(*s.fault); err != nil {
				t.Fatal(err)
			}
		}
		w.retarget(s, rt)
		outcome := s.run(rt)
		w.c.sim.ClearFaults()
		w.log = append(w.log, fmt.Sprintf("%2d. %s → %s", i+1, s.desc, outcome))
		if err := w.c.settle(); err != nil {
			t.Fatal(err)
		}
		after, err := w.c.snapshot()
		if err != nil {
			t.Fatal(err)
		}
		w.classify(after)
		v := w.check(w.snap, after, s)
		v = append(v, s.violations...)
		w.snap = after
		if len(v) > 0 && os.Getenv("STACKWARD_OWNERSHIP_ALL") != "" {
			// Cataloguing: every violated step, going on from there.
			t.Errorf("seed %d step %d (%s):\n  %s", seed, i+1, s.desc, strings.Join(v, "\n  "))
		} else if len(v) > 0 {
			t.Fatalf("ownership violated at step %d of seed %d (replay: STACKWARD_OWNERSHIP_SEED=%d STACKWARD_OWNERSHIP_STEPS=%d go test -count=1 -run TestOwnershipGenerative ./pkg/loadbalancer/):\n  %s\nsteps:\n%s",
				i+1, seed, seed, i+1, strings.Join(v, "\n  "), strings.Join(w.log, "\n"))
		}
	}
	t.Logf("seed %d: %d steps in %s:\n%s", seed, steps, time.Since(start).Round(time.Millisecond), strings.Join(w.log, "\n"))
}

// step is one move of one actor: a namespace user's change with the
// service controller's sync of it, a sync alone, a restart of Y's CCM, a
// node change, or X at work. svc is the Service of Y whose sync it is
// ("" when it touches many), for the namespace rule of invariant 1.
type step struct {
	desc  string
	actor owner
	svc   string
	fault *cloudsim.FaultRule
	// pickExisting: svc is only a wish; the step acts on an existing
	// Service of Y when svc does not exist (retarget).
	pickExisting bool
	run          func(rt *rand.Rand) string
	violations   []string
}

var (
	genNamespaces = []string{"a", "b"}
	genNames      = []string{"web", "api", "db", "app"}
)

// genFields are the Service's ownership-relevant settings and the values
// a namespace user picks from, resolved when the step runs (resolve).
var genFields = []struct {
	key    string
	values []string
}{
	{loadbalancer.AnnotationLoadBalancerID, []string{"x-upstream:a/api", "x-upstream:b/db", "x:a/web", "op:plain", "op:consent", "op:named",
		"y:a/web", "y:a/api", "y:a/db", "y:a/app", "y:b/web", "y:b/api", "y:b/db", "y:b/app", "bogus"}},
	{loadbalancer.AnnotationKeepFloatingIP, []string{"true", "false"}},
	{"spec.loadBalancerIP", []string{"op-reserved", "x-upstream-fip", "kept", "fresh"}},
	{loadbalancer.AnnotationPortID, []string{"node-1", "op-vm", "op-free"}},
	{loadbalancer.AnnotationFloatingNetworkID, []string{"public", "private"}},
	{loadbalancer.AnnotationFloatingSubnetID, []string{"public-subnet"}},
	{loadbalancer.AnnotationSubnetID, []string{"private-subnet"}},
	{loadbalancer.AnnotationMemberSubnetID, []string{"private-subnet"}},
	{loadbalancer.AnnotationNetworkID, []string{"private"}},
}

// genFaults are the injected cloud failures, each bounded in calls.
var genFaults = []cloudsim.FaultRule{
	{Service: "load-balancer", Status: 500, ErrorRate: 0.3, Times: 3},
	{Service: "network", Status: 503, ErrorRate: 0.3, Times: 3},
	{Service: "load-balancer", Operation: "loadbalancers.update", Status: 409, Times: 1},
	{Service: "load-balancer", Operation: "loadbalancers.delete", Status: 409, Times: 1},
	{Service: "load-balancer", Operation: "listeners.create", Hang: true, Times: 1},
	{Service: "network", Operation: "floatingips.create", Status: 500, Times: 1},
	{Service: "network", Operation: "floatingips.update", Hang: true, Times: 1},
	{Service: "network", Operation: "floatingips.delete", Status: 500, Times: 1},
	{Service: "network", Operation: "ports.update", Status: 409, Times: 1},
}

func (w *world) pick(list []string) string { return list[w.gen.Intn(len(list))] }

// nextStep draws the next step from w.gen alone, so a seed always draws
// the same steps; what they find in the cloud is resolved when they run.
func (w *world) nextStep() *step {
	ref := w.pick(genNamespaces) + "/" + w.pick(genNames)
	var fault *cloudsim.FaultRule
	if w.gen.Intn(5) == 0 {
		f := genFaults[w.gen.Intn(len(genFaults))]
		fault = &f
	}
	field := genFields[w.gen.Intn(len(genFields))]
	value, unset := w.pick(field.values), w.gen.Intn(3) == 0
	var fields [][2]string
	for i, f := range genFields {
		// Sharing, the most tangled ownership question, is drawn most.
		if i == 0 && w.gen.Intn(4) == 0 || i > 0 && w.gen.Intn(12) == 0 {
			fields = append(fields, [2]string{f.key, w.pick(f.values)})
		}
	}
	lie, mgr := w.pick([]string{"", genServers["op-vm"], genServers["node-x"]}), w.gen.Intn(2)
	xRef := w.pick([]string{"a/web", "b/web"})
	s := &step{actor: ownerY, svc: ref, fault: fault}
	switch k := w.gen.Intn(100); {
	case k < 22:
		s.desc = fmt.Sprintf("Y user creates %s %v, synced", ref, fields)
		s.run = func(rt *rand.Rand) string { return w.create(s, ref, fields, rt) }
	case k < 40:
		s.pickExisting = true
		verb := "sets " + field.key + "=" + value
		if unset {
			verb = "removes " + field.key
		}
		s.desc = fmt.Sprintf("Y user %s on %s, synced", verb, ref)
		s.run = func(rt *rand.Rand) string { return w.update(s, s.svc, field.key, value, unset, rt) }
	case k < 54:
		s.desc, s.pickExisting = fmt.Sprintf("Y user deletes %s, synced", ref), true
		s.run = func(rt *rand.Rand) string {
			if w.ySvcs[s.svc] == nil {
				return "no Service"
			}
			w.ySvcs[s.svc].deleting = true
			return w.syncY(s, s.svc, rt)
		}
	case k < 72:
		s.desc, s.pickExisting = fmt.Sprintf("Y's service controller resyncs %s", ref), true
		s.run = func(rt *rand.Rand) string {
			if w.ySvcs[s.svc] == nil {
				return "no Service"
			}
			return w.syncY(s, s.svc, rt)
		}
	case k < 76:
		o := genOutages[w.gen.Intn(len(genOutages))]
		s.desc, s.svc, s.fault = "operator rotates Y's password during a Keystone outage ("+outageString(o)+")", "", nil
		s.run = func(rt *rand.Rand) string { return w.rotateY(s, o, rt) }
	case k < 82:
		s.desc, s.svc, s.fault = fmt.Sprintf("Y's CCM %d restarts", mgr), "", nil
		s.run = func(*rand.Rand) string { w.mY[mgr] = w.c.manager(uidY); return "fresh Manager" }
	case k < 90:
		s.desc, s.svc = fmt.Sprintf("node-2 reports InternalIP %q; Y updates every Service", lie), ""
		s.run = func(rt *rand.Rand) string { w.lying = lie; return w.updateAll(rt) }
	default:
		s.desc, s.actor, s.svc, s.fault = fmt.Sprintf("X recreates its Service %s", xRef), ownerX, "", nil
		s.run = func(*rand.Rand) string { return w.recreateX(s, xRef) }
	}
	if f := s.fault; f != nil {
		s.desc += fmt.Sprintf(" [fault %s %s %d hang=%v x%d]", f.Service, f.Operation, f.Status, f.Hang, f.Times)
	}
	return s
}

// retarget points a step that acts on an existing Service at one when the
// Service it drew does not exist, picked with the step's own randomness.
func (w *world) retarget(s *step, rt *rand.Rand) {
	if !s.pickExisting || w.ySvcs[s.svc] != nil || len(w.ySvcs) == 0 {
		return
	}
	refs := slices.Sorted(maps.Keys(w.ySvcs))
	ref := refs[rt.Intn(len(refs))]
	s.desc = strings.Replace(s.desc, s.svc, ref+" (drawn: "+s.svc+")", 1)
	s.svc = ref
}

func (w *world) yNodes() []*corev1.Node {
	ip2 := genServers["node-2"]
	if w.lying != "" {
		ip2 = w.lying
	}
	return []*corev1.Node{w.c.node("node-1", genServers["node-1"]), w.c.node("node-2", ip2)}
}

func (w *world) create(s *step, ref string, fields [][2]string, rt *rand.Rand) string {
	if g := w.ySvcs[ref]; g != nil {
		return "exists; " + w.syncY(s, ref, rt)
	}
	ns, name, _ := strings.Cut(ref, "/")
	w.nextUID++
	g := &genSvc{svc: genService(ns, name, w.nextUID), statusGen: -1}
	var set []string
	for _, f := range fields {
		if v := w.resolve(f[1], rt); v != "" {
			setField(g.svc, f[0], v)
			set = append(set, f[0]+"="+v)
		}
	}
	w.ySvcs[ref] = g
	w.yEver[ref] = true
	return fmt.Sprintf("uid …%d %v; %s", w.nextUID, set, w.syncY(s, ref, rt))
}

func (w *world) update(s *step, ref, key, value string, unset bool, rt *rand.Rand) string {
	g := w.ySvcs[ref]
	if g == nil || g.deleting {
		return "no such Service"
	}
	v := ""
	if !unset {
		if v = w.resolve(value, rt); v == "" {
			return "nothing to point at"
		}
	}
	setField(g.svc, key, v)
	g.specGen++
	if !keeps(g.svc) {
		for addr, uid := range w.kept {
			if uid == string(g.svc.UID) {
				delete(w.kept, addr)
			}
		}
	}
	return fmt.Sprintf("%s=%q; %s", key, v, w.syncY(s, ref, rt))
}

func setField(svc *corev1.Service, key, v string) {
	switch {
	case key == "spec.loadBalancerIP":
		svc.Spec.LoadBalancerIP = v
	case v == "":
		delete(svc.Annotations, key)
	default:
		svc.Annotations[key] = v
	}
}

func keeps(svc *corev1.Service) bool {
	return svc.Spec.LoadBalancerIP != "" || svc.Annotations[loadbalancer.AnnotationKeepFloatingIP] == "true"
}

// resolve turns a symbolic value into the ID or address it names now,
// "" when there is nothing of the kind.
func (w *world) resolve(v string, rt *rand.Rand) string {
	n := rt.Intn(1000)
	kind, arg, _ := strings.Cut(v, ":")
	switch kind {
	case "x-upstream":
		return w.upstreamX[arg]
	case "x":
		return w.lbOf(arg, uidX)
	case "y":
		return w.lbOf(arg, uidY)
	case "op":
		return w.opLB[arg]
	case "bogus":
		return "00000000-0000-4000-8000-00000000dead"
	case "op-reserved":
		return w.opReservedFIP
	case "x-upstream-fip":
		return w.upstreamXFIP[n%len(w.upstreamXFIP)]
	case "kept":
		addrs := slices.Sorted(maps.Keys(w.kept))
		if len(addrs) == 0 {
			return ""
		}
		return addrs[n%len(addrs)]
	case "fresh":
		return fmt.Sprintf("203.0.113.%d", 200+n%40)
	case "node-1", "op-vm":
		return w.c.serverPort[kind]
	case "op-free":
		return w.opFreePort
	case "public":
		return w.c.publicNet
	case "private":
		return w.c.privateNet
	case "public-subnet":
		return w.c.publicSubnet
	case "private-subnet":
		return w.c.subnetID
	}
	return v
}

// lbOf is the load balancer the cluster of uid made for the Service ref.
func (w *world) lbOf(ref, uid string) string {
	for id, l := range w.snap.lbs {
		if slices.Contains(l.lb.Tags, "kube_cluster_uid="+uid) && slices.Contains(l.lb.Tags, "kube_service="+ref) {
			return id
		}
	}
	return ""
}

func isRetryErr(err error) bool {
	var re *api.RetryError
	return errors.As(err, &re)
}

// syncY is the service controller's sync of a Service of Y, at most 12
// calls: Ensure until it returns no RetryError; for a Service being
// deleted, Get first, and without a load balancer the finalizer goes
// without a Delete; else Delete until it returns nil. Either of Y's
// Managers may make each call (two CCMs around a failover). Any other
// error ends the step; a later one syncs again.
func (w *world) syncY(s *step, ref string, rt *rand.Rand) string {
	g := w.ySvcs[ref]
	ctx := context.Background()
	w.syncErr = nil
	for range 12 {
		m := w.mY[rt.Intn(2)]
		if g.deleting {
			st, exists, err := m.Get(ctx, genCluster, g.svc)
			if err != nil {
				w.syncErr = err
				return "Get: " + short(err)
			}
			if !exists {
				delete(w.ySvcs, ref)
				return "gone (Get: no load balancer)"
			}
			s.violations = append(s.violations, w.foreign(ownerY, ref, "Get", st)...)
			err = m.Delete(ctx, genCluster, g.svc)
			switch {
			case err == nil:
				delete(w.ySvcs, ref)
				return "deleted"
			case isRetryErr(err):
				time.Sleep(3 * time.Millisecond)
				continue
			}
			w.syncErr = err
			return "Delete: " + short(err)
		}
		st, err := m.Ensure(ctx, genCluster, g.svc.DeepCopy(), w.yNodes())
		switch {
		case err == nil:
			s.violations = append(s.violations, w.foreign(ownerY, ref, "Ensure", st)...)
			if old := ingressIPs(&g.svc.Status.LoadBalancer); g.statusGen == g.specGen && old != ingressIPs(st) {
				s.violations = append(s.violations, fmt.Sprintf("invariant 3: %s's ingress changed from %s to %s without a change of its spec", ref, old, ingressIPs(st)))
			}
			g.svc.Status.LoadBalancer, g.statusGen = *st, g.specGen
			return "ingress " + ingressIPs(st)
		case isRetryErr(err):
			time.Sleep(3 * time.Millisecond)
			continue
		}
		w.syncErr = err
		return "Ensure: " + short(err)
	}
	return "requeued"
}
