//go:build e2e

package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/loadbalancer"
)

// TestSoakRealCloud is the soak on real OpenStack (Debian Zed, in the
// lab's namespace): the same seeded schedule of Service, node and server
// churn, CCM and approver failovers and an apiserver restart, with the
// real services' faults instead of the simulator's: a service restarted,
// SIGKILLed or frozen (SIGSTOP) for a few seconds, one at a time. Each
// fault ends by itself; the schedule then waits until the cloud answers
// again and records how long every Node and Service took to converge, and
// how many calls stackward-ccm made meanwhile. The invariants are the
// simulator soak's, checked after every step and at the end.
//
// STACKWARD_SOAK_REAL (default 3m: the bounded run of `make test`; `make
// soak-real SOAK=30m` runs it long), STACKWARD_SOAK_SEED replays a
// schedule, STACKWARD_SOAK_REPORT names the JSON report.
func TestSoakRealCloud(t *testing.T) {
	d := env("STACKWARD_SOAK_REAL", 3*time.Minute, time.ParseDuration)
	long := d >= 10*time.Minute
	seed := env("STACKWARD_SOAK_SEED", time.Now().UnixNano(), func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) })
	// Real servers take tens of seconds to boot: fewer of everything.
	nNodes := env("STACKWARD_SOAK_NODES", map[bool]int{true: 6, false: 3}[long], strconv.Atoi)
	nServices := env("STACKWARD_SOAK_SERVICES", map[bool]int{true: 10, false: 4}[long], strconv.Atoi)
	reportPath := env("STACKWARD_SOAK_REPORT", filepath.Join(t.TempDir(), "soak-real.json"), func(s string) (string, error) { return filepath.Abs(s) })
	t.Logf("real soak: seed %d (replay with STACKWARD_SOAK_SEED=%d), %s, %d nodes, %d services", seed, seed, d, nNodes, nServices)

	rc := framework.SharedRealCloud(t)
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Minute)
	defer cancel()
	if _, err := rc.WaitHealthy(ctx, time.Time{}, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	s := &soak{t: t, ctx: ctx, rng: rand.New(rand.NewPCG(uint64(seed), 0x50a4)), led: newLedger(), d: d,
		cp: framework.SharedControlPlane(t), cloud: rc, real: &realFaults{rc: rc}, marked: map[string]bool{},
		nodes: map[string]*node{}, services: map[string]time.Time{}, nServices: nServices}
	s.report.Seed, s.report.Nodes, s.report.Services = seed, nNodes, nServices
	s.play(reportPath)
	if len(s.report.RealFaults) == 0 {
		t.Errorf("no fault was injected in %s (seed %d)", d, seed)
	}
	t.Logf("admin actions (a load balancer marked ERROR after its LoadBalancerStuck Warning): %d", len(s.report.AdminActions))
	for k, sum := range s.report.RealFaultsByKind {
		t.Logf("%-32s injected %d, healthy again after ≤%.0fs, converged ≤%.0fs after (%d not within %s), CCM cloud calls during %d (%d failed)",
			k, sum.Injected, sum.MaxHealthySeconds, sum.MaxConvergedSeconds, sum.NotConverged, realConvergeBound, sum.CloudCalls, sum.CloudErrors)
	}
}

// realStuckAfter is stackward-ccm's --lb-stuck-after in the real soak:
// short, so that a load balancer a fault left PENDING_* for good is
// reported, and its admin acts, within realConvergeBound. simStuckAfter
// is the simulator soak's: longer than its "octavia stuck PENDING" hangs
// (at most 60 s), which end by themselves.
const (
	realStuckAfter = time.Minute
	simStuckAfter  = 90 * time.Second
)

// stuckLB is the load balancer ID a LoadBalancerStuck Event names:
// "load balancer <name> (<id>) has ...".
var stuckLB = regexp.MustCompile(`load balancer \S+ \(([0-9a-f-]{36})\)`)

// actAsAdmin is the OpenStack admin the stuck load balancer's Warning asks
// for, and nothing more: for every LoadBalancerStuck Event on a soak
// Service it marks the load balancer the Event names ERROR in Octavia's
// database (there is no API for it), once per load balancer. Stackward
// must then replace it by itself. Without this, a load balancer a killed
// octavia-worker left PENDING_* (or ACTIVE with children PENDING_*) keeps
// its Service unconverged for good, as on any Zed without jobboard.
func (s *soak) actAsAdmin(ctx context.Context) {
	markError := func(id string) error {
		if s.sim != nil {
			return s.sim.Sim.MarkLoadBalancerError(id)
		}
		return s.real.rc.MarkLoadBalancerError(ctx, id)
	}
	events, err := s.cp.Admin.CoreV1().Events("soak").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + loadbalancer.ReasonLoadBalancerStuck})
	if err != nil {
		return // a slow apiserver: the next poll looks again
	}
	for _, e := range events.Items {
		m := stuckLB.FindStringSubmatch(e.Message)
		if m == nil {
			s.t.Errorf("%s Event on %s names no load balancer ID: %q", e.Reason, e.InvolvedObject.Name, e.Message)
			continue
		}
		if s.marked[m[1]] {
			continue
		}
		if err := markError(m[1]); err != nil {
			s.t.Logf("admin: marking load balancer %s ERROR for %s: %v (tried again at the next look)", m[1], e.InvolvedObject.Name, err)
			continue
		}
		s.marked[m[1]] = true
		s.report.AdminActions = append(s.report.AdminActions, AdminAction{At: s.elapsed(), Service: e.InvolvedObject.Name, LoadBalancer: m[1], Reported: e.Message})
		s.t.Logf("%.0fs: admin: marked load balancer %s of Service %s ERROR, as its Warning asked: %s", s.elapsed(), m[1], e.InvolvedObject.Name, e.Message)
	}
}

// realConvergeBound is how long after a fault the schedule waits for
// every Node and Service to converge before it goes on (the last fault's
// bound is converge's, 5 minutes).
const realConvergeBound = 3 * time.Minute

// realFaults is the real cloud's fault in progress, at most one.
type realFaults struct {
	rc     *framework.RealCloud
	active *framework.ActiveFault
	index  int // its entry in report.Faults
	at     float64
	calls  ccmCallCount // the CCM's cloud calls and errors when it began
}

// realStep is step on the real cloud: a fault on one of the services
// (never while another lasts), or the churn. The soak's own server and
// floating IP changes wait for the end of a fault: they go through the
// faulted APIs, unlike on the simulator.
func (s *soak) realStep(r int, faultUntil *time.Time) {
	switch {
	case r < 30 && faultUntil.IsZero():
		f := framework.Fault{
			Kind:    framework.FaultKinds[s.rng.IntN(len(framework.FaultKinds))],
			Service: framework.FaultServices[s.rng.IntN(len(framework.FaultServices))],
			For:     time.Duration(5+s.rng.IntN(11)) * time.Second,
		}
		if f.Service == "mariadb" && f.Kind == framework.FaultKill {
			// The lab's MariaDB runs with innodb_flush_log_at_trx_commit = 0:
			// SIGKILL loses the last second of commits, which no
			// production database does. It is restarted instead.
			f.Kind = framework.FaultRestart
		}
		s.real.begin(s, f)
		*faultUntil = time.Now().Add(f.For)
	case s.real.active != nil && r < 71:
		s.churnService()
	default:
		s.churn(r)
	}
}

func (f *realFaults) begin(s *soak, fault framework.Fault) {
	f.calls = ccmCalls(s)
	f.at = s.elapsed()
	f.active = f.rc.InjectFault(s.t, fault)
	s.fault("real "+string(fault.Kind), fmt.Sprintf("%s of %s for %s", fault.Kind, fault.Service, fault.For), f.at+fault.For.Seconds())
	f.index = len(s.report.Faults) - 1
}

// end ends the fault in progress, if any, waits for the cloud to answer
// again, then for the cluster to converge, and records what it cost.
func (f *realFaults) end(s *soak) {
	a := f.active
	if a == nil {
		return
	}
	f.active = nil
	if err := a.End(); err != nil {
		s.t.Fatal(err)
	}
	healthy, err := f.rc.WaitHealthy(s.ctx, a.Ended(), 5*time.Minute)
	if err != nil {
		s.t.Fatalf("after %s: %v", a.Fault, err)
	}
	calls := ccmCalls(s)
	failed := map[string]int{}
	for k, n := range calls.errors {
		if d := n - f.calls.errors[k]; d > 0 {
			failed[k] = d
		}
	}
	s.report.Faults[f.index].Until = s.elapsed()
	start := time.Now()
	converged := -1.0
	if wait.PollUntilContextTimeout(s.ctx, time.Second, realConvergeBound, true, func(ctx context.Context) (bool, error) {
		_, n, _ := s.unconverged()
		if n > 0 {
			s.actAsAdmin(ctx)
		}
		return n == 0, nil
	}) == nil {
		converged = time.Since(start).Seconds()
	}
	s.report.RealFaults = append(s.report.RealFaults, RealFault{
		Kind: string(a.Kind), Service: a.Service, At: f.at,
		WindowSeconds: a.Ended().Sub(a.Started).Seconds(), HealthySeconds: healthy.Seconds(), ConvergedSeconds: converged,
		CloudCalls: calls.calls - f.calls.calls, CloudErrors: calls.failed - f.calls.failed, Failures: failed,
	})
	s.t.Logf("%.0fs: %s: healthy %.0fs after, converged %.0fs after that; CCM cloud calls %d (%d failed: %v)",
		f.at, a.Fault, healthy.Seconds(), converged, calls.calls-f.calls.calls, calls.failed-f.calls.failed, failed)
}

// ccmCallCount is stackward-ccm's OpenStack requests (attempts) so far,
// the failed ones, and those by "service operation code".
type ccmCallCount struct {
	calls, failed int
	errors        map[string]int
}

// ccmCalls reads ccmCallCount from the CCM's metrics.
func ccmCalls(s *soak) ccmCallCount {
	out := ccmCallCount{errors: map[string]int{}}
	if s.ccmReg == nil {
		return out
	}
	families, err := s.ccmReg.Gather()
	if err != nil {
		s.t.Fatal(err)
	}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "stackward_cloud_request_duration_seconds":
				out.calls += int(m.GetHistogram().GetSampleCount())
			case "stackward_cloud_request_errors_total":
				n := int(m.GetCounter().GetValue())
				out.failed += n
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				out.errors[labels["service"]+" "+labels["operation"]+" "+labels["code"]] += n
			}
		}
	}
	return out
}
