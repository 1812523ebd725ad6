//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stackward/stackward/e2e/framework"
)

// The demo is run as `make demo` runs it, from the host's network namespace:
// it puts itself in the lab, and the test reaches the cluster only through
// the forward on the host's loopback, as a user's kubectl would.
func TestDemoBringsEveryNodeUpAndLeavesNothingBehind(t *testing.T) {
	if framework.InLab() {
		t.Fatal("run this test from the host: the demo makes its own lab")
	}
	framework.ToolsDir(t)
	const nodes = 3
	dir := t.TempDir()
	bin := filepath.Join(dir, "demo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build the demo: %v\n%s", err, out)
	}

	marker := "STACKWARD_DEMO_TEST=" + randomHex(t)
	summaryPath := filepath.Join(dir, "summary.json")
	// -duration is the safety net; the test ends the demo with SIGINT, as
	// Ctrl-C would, once it has looked at the cluster.
	cmd := exec.Command(bin, "-n", strconv.Itoa(nodes), "-duration", "2m", "-timeout", "4m",
		"-summary-json", summaryPath, "-dir", filepath.Join(dir, "out"))
	cmd.Env = append(os.Environ(), marker)
	var stdout syncBuffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("demo output:\n%s", stdout.String())
			if log, err := os.ReadFile(filepath.Join(dir, "out", "demo.log")); err == nil && len(log) > 8000 {
				t.Logf("end of demo.log:\n%s", log[len(log)-8000:])
			}
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var s summary
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case err := <-exited:
			exited <- err
			return false, fmt.Errorf("the demo exited before writing its summary: %w", err)
		default:
		}
		data, err := os.ReadFile(summaryPath)
		if err != nil {
			return false, nil
		}
		return true, json.Unmarshal(data, &s)
	})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("every node is Ready, initialized by the CCM and has an issued serving certificate", func(t *testing.T) {
		if len(s.Nodes) != nodes || !s.AllReady {
			t.Fatalf("summary has %d nodes (want %d), allReady=%v", len(s.Nodes), nodes, s.AllReady)
		}
		for _, n := range s.Nodes {
			if n.Registered < 0 || n.Ready < 0 || n.Initialized < 0 || n.CertApproved < 0 || n.CertIssued < 0 {
				t.Errorf("node %s: registered %.1f, cert approved %.1f, issued %.1f, initialized %.1f, Ready %.1f (-1: never)",
					n.Name, n.Registered, n.CertApproved, n.CertIssued, n.Initialized, n.Ready)
			}
			if n.ApprovalReason != "StackwardVerified" || len(n.Denials) > 0 {
				t.Errorf("node %s: approval %q, denials %v", n.Name, n.ApprovalReason, n.Denials)
			}
			if n.NodeProviderID != n.ProviderID || !strings.HasSuffix(n.ProviderID, "/"+n.ServerID) {
				t.Errorf("node %s: Node providerID %q, stackward-node derived %q, server %s", n.Name, n.NodeProviderID, n.ProviderID, n.ServerID)
			}
			if n.InstanceType != n.Flavor || n.Zone != n.AZ {
				t.Errorf("node %s: instance type %q zone %q, the cloud says %s %s", n.Name, n.InstanceType, n.Zone, n.Flavor, n.AZ)
			}
			if n.FloatingIP != "" && !contains(n.Addresses, "ExternalIP="+n.FloatingIP) {
				t.Errorf("node %s: addresses %v lack the floating IP %s", n.Name, n.Addresses, n.FloatingIP)
			}
		}
	})

	t.Run("the approver approved every request and denied none", func(t *testing.T) {
		approved := 0
		for k, v := range s.Decisions {
			decision, _, _ := strings.Cut(k, "/")
			switch decision {
			case "approved":
				approved += v
			case "denied":
				t.Errorf("approver decisions include %s=%d: %v", k, v, s.Decisions)
			}
		}
		if approved < nodes || s.ServingCSRs["Approved/StackwardVerified"] < nodes || s.ServingCSRs["Issued"] < nodes {
			t.Errorf("approver decisions %v, serving CSRs %v: want at least %d approved and issued", s.Decisions, s.ServingCSRs, nodes)
		}
		if s.CloudCallsTotal == 0 || s.CloudCalls["compute.servers.get"]+s.CloudCalls["compute.servers.detail"] == 0 {
			t.Errorf("cloud calls %v: Nova was never asked", s.CloudCalls)
		}
	})

	t.Run("the demo's LoadBalancer Service gets an address from Octavia", func(t *testing.T) {
		if s.LoadBalancer == nil {
			t.Fatal("the demo created no LoadBalancer Service: the chart does not let stackward-ccm write Service status")
		}
		if s.LoadBalancer.Address == "" || s.CloudCalls["load-balancer.loadbalancers.create"] == 0 {
			t.Errorf("load balancer %+v, cloud calls %v: want an address from Octavia", s.LoadBalancer, s.CloudCalls)
		}
	})

	t.Run("the printed kubeconfig works from the host through the forward", func(t *testing.T) {
		if !strings.Contains(stdout.String(), "export KUBECONFIG="+s.Kubeconfig) {
			t.Errorf("the output does not say export KUBECONFIG=%s", s.Kubeconfig)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(cfg.Host, "https://127.0.0.1:") {
			t.Fatalf("kubeconfig server %s is not on the host's loopback", cfg.Host)
		}
		list, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list nodes through %s: %v", cfg.Host, err)
		}
		ready := 0
		for i := range list.Items {
			if framework.IsReady(&list.Items[i]) {
				ready++
			}
		}
		if ready != nodes {
			t.Errorf("through the forward: %d Ready nodes of %d, want %d", ready, len(list.Items), nodes)
		}
	})

	t.Run("progress is shown as it happens, one line per event", func(t *testing.T) {
		out := stdout.String()
		for _, n := range s.Nodes {
			for _, ev := range []string{"registered", "serving certificate approved", "initialized by stackward-ccm", "Ready"} {
				if !hasLine(out, n.Name, ev) {
					t.Errorf("no %q line for %s", ev, n.Name)
				}
			}
		}
	})

	t.Run("Ctrl-C tears everything down and leaves no process behind", func(t *testing.T) {
		// The marker does find the demo's processes while it runs.
		if running := processesWith(marker); !strings.Contains(strings.Join(running, "\n"), "hollow-kubelet") {
			t.Fatalf("the marker finds no hollow kubelet while the demo runs: %v", running)
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			exited <- err
			if err != nil {
				t.Errorf("demo exited with %v after SIGINT", err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("the demo did not stop within 60s of SIGINT")
		}
		if left := processesWith(marker); len(left) > 0 {
			t.Errorf("processes left behind: %s", strings.Join(left, "; "))
		}
		if !strings.Contains(stdout.String(), "stopped 3 kubelets") {
			t.Errorf("no teardown line in the output")
		}
	})
}

// processesWith lists the processes whose environment holds marker (every
// process the demo starts inherits it).
func processesWith(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(marker+"\x00")) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return out
}

func hasLine(out, node, event string) bool {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		// "[  12.3s] node-01 event..."
		_, rest, ok := strings.Cut(sc.Text(), "] ")
		f := strings.Fields(rest)
		if ok && len(f) >= 2 && f[0] == node && strings.HasPrefix(strings.Join(f[1:], " "), event) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func randomHex(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
