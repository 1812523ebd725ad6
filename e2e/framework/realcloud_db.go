package framework

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// SQL runs statements as MariaDB's root over the lab's socket, as an
// OpenStack admin does at the database, and returns the tab-separated
// rows.
func (r *RealCloud) SQL(ctx context.Context, statements string) (string, error) {
	c := exec.CommandContext(ctx, "mariadb", r.mariadbArgs("-N", "-B", "-e", statements)...)
	c.Env = RealCloudEnv(RealCloudIP)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		return "", fmt.Errorf("mariadb %q: %w: %s", statements, err, bytes.TrimSpace(errb.Bytes()))
	}
	return out.String(), nil
}

func (r *RealCloud) mariadbArgs(extra ...string) []string {
	return append([]string{
		"--defaults-file=" + filepath.Join(r.Dir, "etc", "my.cnf"),
		"--socket=" + filepath.Join(r.Dir, "mysql", "mysql.sock"),
		"-uroot",
	}, extra...)
}

// MarkLoadBalancerError is what an OpenStack admin does to a load balancer
// Octavia left PENDING_*: set its provisioning_status to ERROR in
// Octavia's database (there is no API for it).
func (r *RealCloud) MarkLoadBalancerError(ctx context.Context, id string) error {
	if strings.ContainsAny(id, "'\\") {
		return fmt.Errorf("load balancer ID %q", id)
	}
	out, err := r.SQL(ctx, fmt.Sprintf("UPDATE octavia.load_balancer SET provisioning_status='ERROR' WHERE id='%s'; SELECT ROW_COUNT();", id))
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) != "1" {
		return fmt.Errorf("mark load balancer %s ERROR: %s rows changed", id, strings.TrimSpace(out))
	}
	return nil
}

// BlockInserts holds, in a MariaDB transaction of its own, next-key
// locks on every row of table (e.g. "octavia.amphora") until the returned
// release is called, or the test ends: every INSERT into the table waits
// (and fails after innodb_lock_wait_timeout, 50 s), while plain reads go
// on. A test uses it to hold a service at a known step of a flow: Octavia's
// API only reads octavia.amphora, while octavia-worker's create flow
// inserts the load balancer's amphora after it has taken the request off
// the queue.
func (r *RealCloud) BlockInserts(ctx context.Context, t testing.TB, table string) (release func()) {
	t.Helper()
	c := exec.Command("mariadb", r.mariadbArgs("-N", "-B", "-n")...)
	c.Env = RealCloudEnv(RealCloudIP)
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatalf("lock %s: %v", table, err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_, _ = io.WriteString(stdin, "ROLLBACK;\n")
			_ = stdin.Close()
			done := make(chan error, 1)
			go func() { done <- c.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = c.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(release)
	if _, err := fmt.Fprintf(stdin, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ; BEGIN; "+
		"SELECT COUNT(*) > -1 FROM %s FOR UPDATE; SELECT 'locked';\n", table); err != nil {
		t.Fatalf("lock %s: %v", table, err)
	}
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if s.Text() != "1" { // the count
				line <- s.Text()
				break
			}
		}
		close(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case got := <-line:
		if got != "locked" {
			release()
			t.Fatalf("lock %s: %q: %s", table, got, stderr.String())
		}
	case <-ctx.Done():
		release()
		t.Fatalf("lock %s: %v", table, ctx.Err())
	}
	return release
}

// SessionsWaitingForLocks counts the MariaDB sessions of service's
// process group that wait for a lock: an InnoDB row lock (a transaction
// in LOCK WAIT) or a table lock ("Waiting for table ... lock").
func (r *RealCloud) SessionsWaitingForLocks(ctx context.Context, service string) (int, error) {
	pid, err := r.ServicePID(service)
	if err != nil {
		return 0, err
	}
	out, err := r.SQL(ctx, "SELECT p.HOST FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST p "+
		"ON p.ID = t.trx_mysql_thread_id WHERE t.trx_state = 'LOCK WAIT' "+
		"UNION ALL SELECT HOST FROM information_schema.PROCESSLIST WHERE STATE LIKE 'Waiting for table%'")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, host := range strings.Fields(out) {
		_, port, err := net.SplitHostPort(host)
		if err != nil {
			continue
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			continue
		}
		if g, ok := tcpClientGroup(p, 3306); ok && g == pid {
			n++
		}
	}
	return n, nil
}

// tcpClientGroup finds the process group of the process holding the TCP
// connection from local port localPort to remote port remotePort (in
// this network namespace).
func tcpClientGroup(localPort, remotePort int) (int, bool) {
	inode := ""
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 {
				continue
			}
			if hexPort(f[1]) == localPort && hexPort(f[2]) == remotePort {
				inode = f[9]
			}
		}
	}
	if inode == "" || inode == "0" {
		return 0, false
	}
	want := "socket:[" + inode + "]"
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if link, err := os.Readlink(fd); err == nil && link == want {
			stat, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(fd)), "stat"))
			if err != nil {
				return 0, false
			}
			_, g, ok := parseProcStat(string(stat))
			return g, ok
		}
	}
	return 0, false
}

// hexPort reads the port of a /proc/net/tcp address ("0202FEC6:D431").
func hexPort(addr string) int {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return -1
	}
	p, err := strconv.ParseUint(addr[i+1:], 16, 16)
	if err != nil {
		return -1
	}
	return int(p)
}
