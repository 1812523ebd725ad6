package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// forwardEnv tells the process inside the lab where the host side of a
// forward waits: "<unix socket>|<host address>|<lab target>".
const forwardEnv = "STACKWARD_LAB_FORWARD"

// Forward is a TCP port on the host's loopback whose connections reach an
// address inside the lab. The lab has its own network namespace, so no
// socket can span both; a unix socket can, because the namespaces share the
// file system. The host side accepts on HostAddr and relays each connection
// through the socket to a relay inside the lab, which dials Target.
type Forward struct {
	// HostAddr is where the host listens, e.g. 127.0.0.1:6443.
	HostAddr string
	// Target is the lab address the relay dials, e.g. 198.18.255.1:6443.
	Target string

	socket string
}

// RunInLabWithForward is RunInLab with a forward from the host into the lab:
// the outer process listens on hostAddr (":0" picks a port) before
// re-executing itself, relays connections while the lab runs, and forwards
// SIGINT and SIGTERM to it; run (inside the lab) gets the Forward with the
// host address actually bound. It exits with run's status.
func RunInLabWithForward(hostAddr, target string, run func(*Forward) int) {
	if InLab() {
		fwd, err := forwardFromEnv()
		if err == nil {
			err = setupNamespace()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e lab:", err)
			os.Exit(2)
		}
		stopRelay, err := fwd.serveInLab()
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e lab:", err)
			os.Exit(2)
		}
		code := run(fwd)
		stopRelay()
		if shared != nil {
			shared.Stop()
		}
		os.Exit(code)
	}
	os.Exit(hostSide(hostAddr, target))
}

func forwardFromEnv() (*Forward, error) {
	parts := strings.Split(os.Getenv(forwardEnv), "|")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%s is not set: start the lab with RunInLabWithForward", forwardEnv)
	}
	return &Forward{socket: parts[0], HostAddr: parts[1], Target: parts[2]}, nil
}

// hostSide listens, starts the lab process and relays until it ends.
func hostSide(hostAddr, target string) int {
	ln, err := net.Listen("tcp", hostAddr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e lab: forward: listen on %s: %v\n", hostAddr, err)
		return 2
	}
	defer ln.Close()
	dir, err := os.MkdirTemp("", "stackward-fwd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e lab: forward:", err)
		return 2
	}
	defer os.RemoveAll(dir)
	fwd := &Forward{HostAddr: ln.Addr().String(), Target: target, socket: filepath.Join(dir, "lab.sock")}

	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e lab: find own binary:", err)
		return 2
	}
	args := append([]string{"--net", "--mount", "--propagation", "private", "--", self}, os.Args[1:]...)
	cmd := exec.Command("unshare", args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), labEnv+"=1", forwardEnv+"="+fwd.socket+"|"+fwd.HostAddr+"|"+fwd.Target)
	// unshare execs the lab process in place (no --fork), so this is the
	// lab process itself: it tears down if we die.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}

	// The terminal's Ctrl-C reaches the lab directly too; a signal sent to
	// us alone (kill, a test's cancel) is passed on. We wait for the lab
	// either way so that nothing outlives us.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e lab: unshare --net --mount (needs root or CAP_SYS_ADMIN):", err)
		return 2
	}
	go fwd.serveOnHost(ln)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			_ = cmd.Process.Signal(sig)
		case err := <-done:
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				return exit.ExitCode()
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "e2e lab:", err)
				return 2
			}
			return 0
		}
	}
}

// serveOnHost relays each host connection to the lab's unix socket.
func (f *Forward) serveOnHost(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			lab, err := net.DialTimeout("unix", f.socket, 5*time.Second)
			if err != nil {
				return // the lab is not up yet, or gone: the client sees a reset
			}
			pipe(conn, lab)
		}()
	}
}

// serveInLab listens on the unix socket and relays each connection to
// Target, until the returned stop is called.
func (f *Forward) serveInLab() (stop func(), err error) {
	_ = os.Remove(f.socket)
	ln, err := net.Listen("unix", f.socket)
	if err != nil {
		return nil, fmt.Errorf("forward: listen on %s: %w", f.socket, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				var d net.Dialer
				dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
				target, err := d.DialContext(dctx, "tcp", f.Target)
				dcancel()
				if err != nil {
					return
				}
				pipe(conn, target)
			}()
		}
	}()
	return func() {
		cancel()
		ln.Close()
		wg.Wait()
		_ = os.Remove(f.socket)
	}, nil
}

// pipe copies both ways until either side is done, then closes both.
func pipe(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	a.Close()
	b.Close()
	<-done
}
