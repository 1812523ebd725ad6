package framework

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// ControlPlaneIP is the apiserver's advertise address inside the lab.
const ControlPlaneIP = "198.18.255.1"

// NodeNetwork is where node addresses come from (198.18.0.0/15 is reserved
// for network testing, RFC 2544).
var NodeNetwork = netip.MustParsePrefix("198.18.0.0/16")

const labEnv = "STACKWARD_E2E_LAB"

// Main is the TestMain of every e2e package. Outside the lab it re-executes
// the test binary under `unshare --net` and exits with its status; inside it
// brings up loopback with the control-plane address and runs the tests.
// Build everything before (go test compiles first), since the namespace has
// no route out.
func Main(m *testing.M) { RunInLab(m.Run) }

// RunInLab runs run inside the lab's network and mount namespaces (the
// process re-executes itself there first) and exits with its status, after
// stopping the shared control plane and real cloud if they were started.
func RunInLab(run func() int) {
	if !InLab() {
		os.Exit(reexecInNamespace())
	}
	if err := setupNamespace(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e lab:", err)
		os.Exit(2)
	}
	code := run()
	if shared != nil {
		shared.Stop()
	}
	if stopRealCloud != nil {
		stopRealCloud()
	}
	os.Exit(code)
}

// InLab reports whether this process runs inside the lab's namespaces.
func InLab() bool { return os.Getenv(labEnv) != "" }

func reexecInNamespace() int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e lab: find test binary:", err)
		return 2
	}
	// A private mount namespace too, so kubeadm can write /etc/kubernetes
	// (a tmpfs there) exactly as on a real control-plane node.
	args := append([]string{"--net", "--mount", "--propagation", "private", "--", self}, os.Args[1:]...)
	cmd := exec.Command("unshare", args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), labEnv+"=1")
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "e2e lab: unshare --net --mount (needs root or CAP_SYS_ADMIN):", err)
		return 2
	}
	return 0
}

// KubernetesDir is kubeadm's fixed /etc/kubernetes; inside the lab it is a
// private tmpfs.
const KubernetesDir = "/etc/kubernetes"

func setupNamespace() error {
	if err := os.MkdirAll(KubernetesDir, 0o755); err != nil {
		return err
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "stackward-lab", KubernetesDir).CombinedOutput(); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w: %s", KubernetesDir, err, out)
	}
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set lo up: %w: %s", err, out)
	}
	return AddAddress(ControlPlaneIP)
}

var (
	addrMu    sync.Mutex
	addresses = map[string]bool{}
)

// AddAddress puts ip on the lab's loopback (once). Only valid inside the lab.
func AddAddress(ip string) error {
	addrMu.Lock()
	defer addrMu.Unlock()
	if addresses[ip] {
		return nil
	}
	if !InLab() {
		return fmt.Errorf("refusing to add %s outside the lab's network namespace", ip)
	}
	prefix := "/32"
	if strings.Contains(ip, ":") {
		prefix = "/128"
	}
	if out, err := exec.Command("ip", "addr", "add", ip+prefix, "dev", "lo").CombinedOutput(); err != nil {
		return fmt.Errorf("ip addr add %s: %w: %s", ip, err, out)
	}
	addresses[ip] = true
	return nil
}

// NodeIP returns the lab address of the i-th node (i >= 1): 198.18.0.i+9,
// wrapping into the next /24s.
// NodeNetworkV6 is the lab network's IPv6 subnet when the cloud is dual-stack
// (SimCloudOptions.DualStack).
var NodeNetworkV6 = netip.MustParsePrefix("fd00:198:18::/64")

// NodeIPv6 is the i-th node's IPv6 address on NodeNetworkV6.
func NodeIPv6(i int) string {
	a := NodeNetworkV6.Addr().As16()
	n := i + 9
	a[14], a[15] = byte(n>>8), byte(n)
	return netip.AddrFrom16(a).String()
}

func NodeIP(i int) string {
	a := NodeNetwork.Addr().As4()
	n := i + 9
	a[2], a[3] = byte(n/250), byte(n%250+1)
	return netip.AddrFrom4(a).String()
}
