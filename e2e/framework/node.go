package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// NodeOptions describe a hollow kubelet.
type NodeOptions struct {
	Name string
	// IP is the node's address in the lab (see NodeIP); it is put on the
	// lab's loopback and the kubelet reports it (--node-ip) and serves on it.
	IP string
	// IPv6 is the node's second address for a dual-stack node (see
	// NodeIPv6): put on the loopback and reported with IP (--node-ip v4,v6).
	IPv6 string
	// ProviderID is optional, as with a real kubelet.
	ProviderID string
	// Port is the kubelet's TLS port (default 10250).
	Port int
	// ExtraArgs are passed to the hollow kubelet as they are.
	ExtraArgs []string
	// Kubelet names the hollow kubelet binary in the tools directory: empty
	// is the control plane's own minor (HollowKubelet), OldestKubelet the
	// oldest minor the version skew policy lets join it.
	Kubelet string
}

// The hollow kubelets e2e/tools/build.sh builds.
const (
	// HollowKubelet is of the control plane's minor (1.37).
	HollowKubelet = "hollow-kubelet"
	// OldestKubelet is three minors older (1.34): the oldest kubelet the
	// version skew policy allows with a 1.37 apiserver, as during an upgrade.
	OldestKubelet = "hollow-kubelet-1.34"
)

// Node is a running hollow kubelet.
type Node struct {
	NodeOptions
	Process *Process

	dir  string
	bin  string
	args []string
}

// StartNode starts a hollow kubelet that joins with the bootstrap token, as
// `kubeadm join` would, and stops it when the test ends.
func (cp *ControlPlane) StartNode(t testing.TB, opts NodeOptions) *Node {
	t.Helper()
	n, err := cp.LaunchNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.Process.Stop()
		if t.Failed() {
			t.Logf("%s", n.Process.Tail(6000))
		}
		n.Remove()
	})
	return n
}

// LaunchNode starts a hollow kubelet; the caller stops it (Stop, Remove).
func (cp *ControlPlane) LaunchNode(opts NodeOptions) (*Node, error) {
	if opts.Port == 0 {
		opts.Port = 10250
	}
	if opts.Kubelet == "" {
		opts.Kubelet = HollowKubelet
	}
	bin := filepath.Join(cp.toolsDir, opts.Kubelet)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("kubelet %s: %w (build it with e2e/tools/build.sh)", opts.Kubelet, err)
	}
	nodeIP := opts.IP
	for _, ip := range []string{opts.IP, opts.IPv6} {
		if ip == "" {
			continue
		}
		if err := AddAddress(ip); err != nil {
			return nil, err
		}
	}
	if opts.IPv6 != "" {
		nodeIP += "," + opts.IPv6
	}
	// Short: the kubelet puts unix sockets under its root dir (108-byte limit).
	dir, err := os.MkdirTemp("", "hk")
	if err != nil {
		return nil, err
	}
	bootstrap := filepath.Join(dir, "bootstrap-kubelet.conf")
	if err := cp.BootstrapKubeconfig(bootstrap); err != nil {
		return nil, err
	}
	args := []string{
		"--name", opts.Name,
		"--node-ip", nodeIP,
		"--port", strconv.Itoa(opts.Port),
		"--cloud-provider", "external",
		"--bootstrap-kubeconfig", bootstrap,
		"--kubeconfig", filepath.Join(dir, "kubelet.conf"),
		"--root-dir", filepath.Join(dir, "root"),
		"--node-status-update-frequency", "2s",
	}
	if opts.ProviderID != "" {
		args = append(args, "--provider-id", opts.ProviderID)
	}
	args = append(args, opts.ExtraArgs...)
	n := &Node{NodeOptions: opts, dir: dir, args: args, bin: bin}
	if err := n.Boot(); err != nil {
		return nil, err
	}
	return n, nil
}

// Start (re)starts the node's kubelet, as booting the VM again would: it
// keeps its certificates and root directory.
func (n *Node) Start(t testing.TB) {
	t.Helper()
	if err := n.Boot(); err != nil {
		t.Fatal(err)
	}
}

// Boot (re)starts the node's kubelet process.
func (n *Node) Boot() error {
	if n.Process != nil {
		n.Process.Kill()
	}
	p, err := StartProcess(n.dir, "kubelet-"+n.Name, n.bin, n.args...)
	if err != nil {
		return err
	}
	n.Process = p
	return nil
}

// Remove stops the kubelet and deletes the node's directory.
func (n *Node) Remove() {
	if n.Process != nil {
		n.Process.Stop()
	}
	_ = os.RemoveAll(n.dir)
}

// Stop powers the node off: its kubelet stops at once.
func (n *Node) Stop() { n.Process.Kill() }

// ServingCertificate dials the kubelet's TLS port and returns the certificate
// it presents, verified against the cluster CA for the node's IP.
func (n *Node) ServingCertificate(ctx context.Context, caPEM []byte) (*x509.Certificate, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no CA certificate in PEM")
	}
	d := tls.Dialer{
		NetDialer: &net.Dialer{Timeout: 5 * time.Second},
		Config:    &tls.Config{RootCAs: pool, ServerName: n.IP, MinVersion: tls.VersionTLS12},
	}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(n.IP, strconv.Itoa(n.Port)))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil, fmt.Errorf("kubelet at %s presented no certificate", n.IP)
	}
	return certs[0], nil
}

// WaitForServingCertificate polls until the kubelet serves a certificate
// that verifies against the cluster CA for its IP.
func (n *Node) WaitForServingCertificate(ctx context.Context, caPEM []byte, timeout time.Duration) (*x509.Certificate, error) {
	var cert *x509.Certificate
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		cert, lastErr = n.ServingCertificate(ctx, caPEM)
		return lastErr == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("serving certificate of %s at %s: %w (last: %w)", n.Name, n.IP, err, lastErr)
	}
	return cert, nil
}

// HasTaint reports whether node carries a taint with key.
func HasTaint(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// IsReady reports whether the node's Ready condition is True.
func IsReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
