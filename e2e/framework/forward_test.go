package framework

import (
	"bufio"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The two halves of a Forward relay whole conversations, both ways, one
// connection per client; here both run in one namespace, on loopback.
func TestForwardRelaysConnectionsThroughTheUnixSocket(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	go func() {
		for {
			conn, err := target.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				sc := bufio.NewScanner(conn)
				for sc.Scan() {
					fmt.Fprintf(conn, "echo %s\n", sc.Text())
				}
			}()
		}
	}()

	fwd := &Forward{Target: target.Addr().String(), socket: filepath.Join(t.TempDir(), "lab.sock")}
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	go fwd.serveOnHost(host)

	// Before the lab side listens, a client is cut off rather than hung.
	if err := converse(host.Addr().String(), "early"); err == nil {
		t.Error("a connection before the lab's relay listens got an answer")
	}
	stop, err := fwd.serveInLab()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := converse(host.Addr().String(), fmt.Sprint("hello-", i)); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	if err := converse(host.Addr().String(), "late"); err == nil {
		t.Error("a connection after the lab's relay stopped got an answer")
	}
}

func converse(addr, msg string) error {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := fmt.Fprintf(conn, "%s\n", msg); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if want := "echo " + msg; strings.TrimSpace(line) != want {
		return fmt.Errorf("got %q, want %q", line, want)
	}
	return nil
}
