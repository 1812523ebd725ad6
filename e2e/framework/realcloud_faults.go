package framework

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// FaultServices are the real cloud's services a fault may hit, by their
// name in hack/realcloud (its pids/NAME): each runs in a process group of
// its own, so a signal reaches its workers too (octavia-worker's cotyledon
// master would otherwise respawn a killed child at once).
var FaultServices = []string{
	"octavia-worker", "octavia-api", "neutron-server", "nova-api", "nova-compute-compute-1",
	"keystone", "placement", "ovn-northd", "rabbitmq", "mariadb",
}

// InjectFault hits one of the real cloud's services now; the fault ends by
// itself after f.For, or when the test ends, whichever comes first. Wait
// for WaitHealthy after it before the next one.
func (r *RealCloud) InjectFault(t testing.TB, f Fault) *ActiveFault {
	t.Helper()
	a, err := injectFault(realCloudProcesses{dir: r.Dir}, f, realAfterFunc, time.Now)
	if err != nil {
		t.Fatalf("real cloud: inject %s: %v (%s)", f, err, r.LogsHint())
	}
	t.Cleanup(func() {
		if err := a.End(); err != nil {
			t.Errorf("real cloud: %v", err)
		}
	})
	return a
}

// ServicePID is the PID (and process group) hack/realcloud recorded for
// service.
func (r *RealCloud) ServicePID(service string) (int, error) {
	return realCloudProcesses{dir: r.Dir}.pid(service)
}

// realCloudProcesses acts on hack/realcloud's process groups in dir.
type realCloudProcesses struct{ dir string }

var _ processGroups = realCloudProcesses{}

func (p realCloudProcesses) pid(service string) (int, error) {
	path := filepath.Join(p.dir, "pids", service)
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("PID of %s: %w", service, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("PID of %s: %s holds %q", service, path, data)
	}
	return pid, nil
}

func (p realCloudProcesses) signal(service string, sig syscall.Signal) error {
	pid, err := p.pid(service)
	if err != nil {
		return err
	}
	if err := syscall.Kill(-pid, sig); err != nil {
		return fmt.Errorf("%s to %s's process group %d: %w", sig, service, pid, err)
	}
	return nil
}

func (p realCloudProcesses) stop(service string, grace time.Duration) error {
	pid, err := p.pid(service)
	if err != nil {
		return err
	}
	// A frozen group cannot act on SIGTERM.
	_ = syscall.Kill(-pid, syscall.SIGCONT)
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGTERM to %s's process group %d: %w", service, pid, err)
	}
	if waitGroupGone(pid, grace) {
		return nil
	}
	return p.kill(service)
}

func (p realCloudProcesses) kill(service string) error {
	pid, err := p.pid(service)
	if err != nil {
		return err
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGKILL to %s's process group %d: %w", service, pid, err)
	}
	if !waitGroupGone(pid, 15*time.Second) {
		return fmt.Errorf("%s's process group %d still has processes 15s after SIGKILL", service, pid)
	}
	return nil
}

func (p realCloudProcesses) respawn(service string) error {
	script := filepath.Join(RepoRoot(), RealCloudScript)
	c := exec.Command("bash", script, "respawn", p.dir, service)
	c.Env = RealCloudEnv(RealCloudIP)
	out, err := c.CombinedOutput()
	if err != nil {
		return fmt.Errorf("respawn %s: %w: %s", service, err, out)
	}
	return nil
}

// waitGroupGone polls until no live process (zombies do not count) is in
// process group pgid, for at most limit.
func waitGroupGone(pgid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		if len(groupStates(pgid)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// groupStates maps each process of group pgid that is not a zombie to its
// state letter in /proc/PID/stat (R, S, D, T for stopped, ...).
func groupStates(pgid int) map[int]byte {
	out := map[int]byte{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		state, group, ok := parseProcStat(string(data))
		if ok && group == pgid && state != 'Z' && state != 'X' {
			out[pid] = state
		}
	}
	return out
}

// parseProcStat reads the state and process group from /proc/PID/stat:
// "pid (comm) state ppid pgrp ...", where comm may hold spaces and parens.
func parseProcStat(stat string) (state byte, pgrp int, ok bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	g, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], g, true
}
