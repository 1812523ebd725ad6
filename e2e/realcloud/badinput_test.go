//go:build e2e

package realcloud

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stackward/stackward/e2e/framework"
)

// badInputIP is a lab address no real cloud listens on: the harness runs
// there beside the package's cloud without touching it.
const badInputIP = "198.18.254.3"

// TestRealCloudBadInput: what goes wrong on a machine before the real cloud
// is up ends in one error that names the cause (the port and its service,
// the missing package, the service that did not come up and its log), and
// leaves nothing running. Each case is made without breaking the machine:
// a port taken by a listener of the test, a dpkg-query that lacks one
// package, a port bound (not listening) in a network namespace of its own.
func TestRealCloudBadInput(t *testing.T) {
	script := filepath.Join(framework.RepoRoot(), framework.RealCloudScript)

	t.Run("a port already in use on the lab address is named with its service, and nothing starts", func(t *testing.T) {
		if err := framework.AddAddress(badInputIP); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", badInputIP+":3306")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		dir := t.TempDir()
		cmd := exec.Command("bash", script, "up", dir)
		cmd.Env = framework.RealCloudEnv(badInputIP)
		out, err := cmd.CombinedOutput()
		assertFailed(t, string(out), err, badInputIP+":3306 (for mariadb) is already in use")
		if pids, _ := filepath.Glob(filepath.Join(dir, "pids", "*")); len(pids) > 0 {
			t.Errorf("processes recorded as started: %v", pids)
		}
		if _, err := os.Stat(filepath.Join(dir, "log")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the harness configured %s before checking its ports (%v)", dir, err)
		}
	})

	t.Run("a missing Debian package is named with the command that installs it", func(t *testing.T) {
		// A dpkg-query that knows every package but the OVN provider's.
		bin := t.TempDir()
		fake := "#!/bin/bash\nfor a; do [[ $a == python3-ovn-octavia-provider ]] && exit 1; done\nexec /usr/bin/dpkg-query \"$@\"\n"
		if err := os.WriteFile(filepath.Join(bin, "dpkg-query"), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", filepath.Join(filepath.Dir(script), "install.sh"), "--check")
		cmd.Env = []string{"PATH=" + bin + ":/usr/sbin:/usr/bin:/sbin:/bin"}
		out, err := cmd.CombinedOutput()
		assertFailed(t, string(out), err, "real cloud: missing Debian packages: python3-ovn-octavia-provider")
		if strings.Count(string(out), "\n") != 1 {
			t.Errorf("want one line, got %q", out)
		}
	})

	t.Run("a service that does not come up is named with its log, and everything started before it is stopped", func(t *testing.T) {
		dir := t.TempDir()
		// A network namespace of its own (epmd's loopback port is the
		// package cloud's here). There python3 binds RabbitMQ's port without
		// listening, so the harness's port check passes and RabbitMQ, started
		// after MariaDB and epmd, fails to listen; then it runs the harness
		// with the socket still open and prints the namespace's identity.
		const holder = `import os, socket, sys
ip = sys.argv[1]
os.system("ip link set lo up && ip addr add %s/32 dev lo" % ip)
s = socket.socket()
s.bind((ip, 5672))
s.set_inheritable(True)  # held through the exec below
print("netns", os.readlink("/proc/self/ns/net"), flush=True)
os.execvp("bash", ["bash"] + sys.argv[2:])
`
		// Whatever happens, what the harness started there stops with the
		// test (before the state directory with its pid files goes).
		t.Cleanup(func() {
			down := exec.Command("bash", script, "down", dir)
			down.Env = framework.RealCloudEnv(badInputIP)
			if out, err := down.CombinedOutput(); err != nil {
				t.Errorf("%s down %s: %v\n%s", script, dir, err, out)
			}
		})
		cmd := exec.Command("unshare", "--net", "--", "python3", "-c", holder, badInputIP, script, "up", dir)
		cmd.Env = framework.RealCloudEnv(badInputIP)
		out, err := cmd.CombinedOutput()
		t.Logf("harness output:\n%s", out)
		assertFailed(t, string(out), err, "real cloud: rabbitmq: exited before listening on "+badInputIP+":5672")
		// One error: the migrations running beside it fail once everything
		// is stopped, and say nothing.
		if errs := regexp.MustCompile(`(?m)^real cloud: [^0-9].*$`).FindAllString(string(out), -1); len(errs) != 1 {
			t.Errorf("want one error, got %d: %q", len(errs), errs)
		}
		if log := filepath.Join(dir, "log", "rabbitmq.log"); !strings.Contains(string(out), "---- last lines of "+log+" ----") {
			t.Errorf("the error does not show the tail of %s", log)
		}
		netns := ""
		for _, line := range strings.Split(string(out), "\n") {
			if rest, ok := strings.CutPrefix(line, "netns "); ok {
				netns = rest
			}
		}
		if netns == "" {
			t.Fatal("the holder did not report its network namespace")
		}
		// A process killed a moment ago may still be exiting on a loaded
		// machine: give the kernel a bounded while before calling it left.
		var left []string
		deadline := time.Now().Add(15 * time.Second)
		for left = processesIn(t, netns); len(left) > 0 && time.Now().Before(deadline); left = processesIn(t, netns) {
			time.Sleep(250 * time.Millisecond)
		}
		if len(left) > 0 {
			t.Errorf("processes left running in the harness's namespace: %v", left)
		}
		if pids, _ := filepath.Glob(filepath.Join(dir, "pids", "*")); len(pids) > 0 {
			t.Errorf("pid files left: %v", pids)
		}
	})
}

// assertFailed checks that the harness failed and said want once.
func assertFailed(t *testing.T, out string, err error, want string) {
	t.Helper()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("want exit status 1, got %v; output:\n%s", err, out)
	}
	if n := strings.Count(out, want); n != 1 {
		t.Errorf("the output says %q %d times, want once:\n%s", want, n, out)
	}
}

// processesIn lists the processes (pid and command) whose network
// namespace is netns ("net:[inode]").
func processesIn(t *testing.T, netns string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if ns, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "net")); err == nil && ns == netns {
			if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && zombie(string(stat)) {
				continue // exited, waiting for its parent: it holds nothing
			}
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return out
}

// zombie says whether /proc/<pid>/stat is a process that has exited and
// is waiting to be reaped (state Z, after the parenthesised command).
func zombie(stat string) bool {
	i := strings.LastIndex(stat, ")")
	return i >= 0 && strings.HasPrefix(strings.TrimSpace(stat[i+1:]), "Z")
}
