package framework

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeGroups records what a fault did to the services.
type fakeGroups struct {
	mu      sync.Mutex
	calls   []string
	stopErr error
}

func (f *fakeGroups) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeGroups) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeGroups) signal(s string, sig syscall.Signal) error {
	f.record(sig.String() + " " + s)
	return nil
}

func (f *fakeGroups) stop(s string, _ time.Duration) error {
	f.record("stop " + s)
	return f.stopErr
}

func (f *fakeGroups) kill(s string) error {
	f.record("kill " + s)
	return nil
}

func (f *fakeGroups) respawn(s string) error {
	f.record("respawn " + s)
	return nil
}

// manualTimer is an afterFunc whose timer fires when the test says.
type manualTimer struct {
	d       time.Duration
	f       func()
	stopped bool
}

func (m *manualTimer) Stop() bool { m.stopped = true; return true }

func (m *manualTimer) after(d time.Duration, f func()) interface{ Stop() bool } {
	m.d, m.f = d, f
	return m
}

func TestFaultsEndByThemselvesAfterTheirDuration(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fault     Fault
		during    []string
		afterwith []string
	}{
		{"a kill SIGKILLs the service now and starts it again when its time is up",
			Fault{FaultKill, "octavia-worker", time.Minute},
			[]string{"kill octavia-worker"}, []string{"kill octavia-worker", "respawn octavia-worker"}},
		{"a restart stops the service and starts it again when its time is up",
			Fault{FaultRestart, "mariadb", 30 * time.Second},
			[]string{"stop mariadb"}, []string{"stop mariadb", "respawn mariadb"}},
		{"a freeze stops the processes and lets them go on when its time is up",
			Fault{FaultFreeze, "neutron-server", 20 * time.Second},
			[]string{"stopped (signal) neutron-server"}, []string{"stopped (signal) neutron-server", "continued neutron-server"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, timer := &fakeGroups{}, &manualTimer{}
			a, err := injectFault(g, tc.fault, timer.after, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.got(); !reflect.DeepEqual(got, tc.during) {
				t.Fatalf("during the fault: %v, want %v", got, tc.during)
			}
			if timer.d != tc.fault.For {
				t.Errorf("the fault ends after %s, want %s", timer.d, tc.fault.For)
			}
			if !a.Ended().IsZero() {
				t.Error("the fault says it ended before its time")
			}
			timer.f()
			select {
			case <-a.Done():
			default:
				t.Fatal("the fault did not end when its time was up")
			}
			if got := g.got(); !reflect.DeepEqual(got, tc.afterwith) {
				t.Errorf("after the fault: %v, want %v", got, tc.afterwith)
			}
			if a.Ended().IsZero() {
				t.Error("no end time")
			}
		})
	}
}

func TestAFaultEndedEarlyEndsOnceAndItsTimerStops(t *testing.T) {
	g, timer := &fakeGroups{}, &manualTimer{}
	a, err := injectFault(g, Fault{FaultKill, "keystone", time.Minute}, timer.after, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.End(); err != nil {
		t.Fatal(err)
	}
	if !timer.stopped {
		t.Error("the fault's timer still runs after End")
	}
	_ = a.End()
	timer.f() // a timer that fired anyway
	if got, want := g.got(), []string{"kill keystone", "respawn keystone"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestAFaultWithRealTimeEndsWithinItsBound(t *testing.T) {
	g := &fakeGroups{}
	start := time.Now()
	a, err := injectFault(g, Fault{FaultFreeze, "placement", 50 * time.Millisecond}, realAfterFunc, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a 50ms fault still lasts after 5s")
	}
	if took := a.Ended().Sub(start); took < 50*time.Millisecond {
		t.Errorf("the fault ended after %s, before its 50ms", took)
	}
}

func TestAFaultThatCannotBeInjectedLeavesTheServiceRunning(t *testing.T) {
	g := &fakeGroups{stopErr: errors.New("no such process group")}
	_, err := injectFault(g, Fault{FaultRestart, "nova-api", time.Second}, (&manualTimer{}).after, time.Now)
	if err == nil || !strings.Contains(err.Error(), "no such process group") {
		t.Fatalf("error %v does not say why", err)
	}
	if got, want := g.got(), []string{"stop nova-api", "respawn nova-api"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestUnboundedOrUnknownFaultsAreRefused(t *testing.T) {
	for _, f := range []Fault{
		{FaultKill, "octavia-api", 0},
		{FaultKill, "octavia-api", MaxFaultDuration + time.Second},
		{"unplug", "octavia-api", time.Second},
		{FaultFreeze, "", time.Second},
	} {
		g := &fakeGroups{}
		if _, err := injectFault(g, f, (&manualTimer{}).after, time.Now); err == nil {
			t.Errorf("%s was injected", f)
		}
		if len(g.got()) > 0 {
			t.Errorf("%s touched a service: %v", f, g.got())
		}
	}
}

func TestWaitHealthyWaitsForARoundWhereEveryCheckPasses(t *testing.T) {
	var n int
	checks := []HealthCheck{
		{"always", func(context.Context) error { return nil }},
		{"third time", func(context.Context) error {
			n++
			if n < 3 {
				return errors.New("503 Service Unavailable")
			}
			return nil
		}},
	}
	if _, err := WaitHealthy(context.Background(), checks, time.Millisecond, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("the failing check ran %d times, want 3", n)
	}
}

func TestWaitHealthyGivesUpAtItsTimeoutNamingWhatFailed(t *testing.T) {
	checks := []HealthCheck{
		{"keystone", func(context.Context) error { return nil }},
		{"octavia-api", func(context.Context) error { return errors.New("connection refused") }},
	}
	start := time.Now()
	_, err := WaitHealthy(context.Background(), checks, 10*time.Millisecond, 200*time.Millisecond)
	if err == nil {
		t.Fatal("a check that never passes is healthy")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("gave up after %s, timeout 200ms", took)
	}
	if !strings.Contains(err.Error(), "octavia-api: connection refused") || strings.Contains(err.Error(), "keystone") {
		t.Errorf("error %q does not name exactly the failing check", err)
	}
}

func TestParseProcStatReadsStateAndGroupPastAnOddCommand(t *testing.T) {
	state, pgrp, ok := parseProcStat("4242 (uwsgi (x) y) T 1 4240 4240 0 -1 4194560")
	if !ok || state != 'T' || pgrp != 4240 {
		t.Errorf("got %c %d %v, want T 4240 true", state, pgrp, ok)
	}
	if _, _, ok := parseProcStat("garbage"); ok {
		t.Error("garbage parsed")
	}
}

// A real process group: stopped shows as T, killed is gone.
func TestGroupStatesSeesAFrozenGroupAndItsEnd(t *testing.T) {
	c := exec.Command("sleep", "30")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	// One Wait, reaped here whatever ends the process (two would race).
	reaped := make(chan struct{})
	go func() { _ = c.Wait(); close(reaped) }()
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL); <-reaped })
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for groupStates(pid)[pid] != 'T' {
		if time.Now().After(deadline) {
			t.Fatalf("group %d never showed stopped: %v", pid, groupStates(pid))
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	if !waitGroupGone(pid, 5*time.Second) {
		t.Errorf("group %d still there after SIGKILL: %v", pid, groupStates(pid))
	}
}

// The connection a test process opens is found to be its own process
// group's (what ties a MariaDB session to the service that opened it).
func TestTCPClientGroupFindsTheProcessOfAConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	local := c.LocalAddr().(*net.TCPAddr).Port
	remote := l.Addr().(*net.TCPAddr).Port
	g, ok := tcpClientGroup(local, remote)
	if want := syscall.Getpgrp(); !ok || g != want {
		t.Errorf("group of %d→%d: %d %v, want %d", local, remote, g, ok, want)
	}
	if _, ok := tcpClientGroup(remote, local+1); ok {
		t.Error("found a connection that does not exist")
	}
	if hexPort("0100007F:0CEA") != 3306 {
		t.Error("hexPort")
	}
}
