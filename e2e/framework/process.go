package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// ToolsDir is where `make tools` put the pinned binaries; the Makefile
// passes it in STACKWARD_TOOLS_DIR.
func ToolsDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("STACKWARD_TOOLS_DIR")
	if dir == "" {
		t.Fatal("STACKWARD_TOOLS_DIR is not set: run the e2e tests with `make e2e` (it builds the tools first)")
	}
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		t.Fatalf("tools in %s are incomplete: run `make tools`", dir)
	}
	return dir
}

// Tool returns the path of a pinned binary (etcd, kube-apiserver, kubeadm, ...).
func Tool(t testing.TB, name string) string {
	return filepath.Join(ToolsDir(t), name)
}

// Process is a child process whose output goes to a log file in the test's
// temp dir; the log is printed when the test fails.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// PID is the process's ID (for reading /proc/<pid>, e.g. its peak RSS).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// StartProcess starts bin with args, logging to dir/<name>.log. The caller
// stops it; see StartProcessForTest for one tied to a test.
func StartProcess(dir, name, bin string, args ...string) (*Process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create log for %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group so Stop reaches its children; killed with us.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// StartProcessForTest is StartProcess for a process that lives as long as
// the test; its log tail is printed if the test fails.
func StartProcessForTest(t testing.TB, dir, name, bin string, args ...string) *Process {
	t.Helper()
	p, err := StartProcess(dir, name, bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("%s", p.Tail(6000))
		}
	})
	return p
}

// Exited reports whether the process has ended, and its error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after 10 s.
func (p *Process) Stop() {
	if done, _ := p.Exited(); done {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Kill ends the process at once, as a VM that is powered off would.
func (p *Process) Kill() {
	if done, _ := p.Exited(); done {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Tail returns the last n bytes of the process's log, with a header.
func (p *Process) Tail(n int) string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(no log for %s: %v)", p.Name, err)
	}
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return fmt.Sprintf("---- last lines of %s (%s) ----\n%s", p.Name, p.LogPath, data)
}

// run runs a short command to completion and returns its combined output.
func run(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %v: %w\n%s", filepath.Base(bin), args, err, out)
	}
	return string(out), nil
}
