package framework

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
)

// WaitHealthy waits until every service of the real cloud answers again
// (see HealthChecks) and every compute service has reported since since
// (the end of the last fault; zero: any time), for at most timeout, and
// returns how long it took.
func (r *RealCloud) WaitHealthy(ctx context.Context, since time.Time, timeout time.Duration) (time.Duration, error) {
	took, err := WaitHealthy(ctx, r.HealthChecks(since), 2*time.Second, timeout)
	if err != nil {
		return took, fmt.Errorf("real cloud: %w (%s)", err, r.LogsHint())
	}
	return took, nil
}

// HealthChecks are the cheap questions that only a working real cloud
// answers: every process group running and not stopped, MariaDB and
// RabbitMQ speaking their protocols, ovn-northd active, a fresh Keystone
// token (which needs MariaDB), and one authenticated read from each API;
// Nova's compute services reported up (which needs RabbitMQ and the
// conductor) after since: a nova-compute that is still starting (or
// exited while starting: it does when Keystone does not answer it) shows
// as "up" for service_down_time after its last report before the fault.
func (r *RealCloud) HealthChecks(since time.Time) []HealthCheck {
	var provider *gophercloud.ProviderClient
	token := func(ctx context.Context) error {
		op := r.Info.Users[realCloudOperator]
		p, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
			IdentityEndpoint: r.Info.AuthURL, Username: realCloudOperator, Password: op.Password,
			DomainName: "Default", Scope: &gophercloud.AuthScope{ProjectName: op.Project, DomainName: "Default"},
		})
		if err != nil {
			provider = nil
			return fmt.Errorf("issue a token: %w", err)
		}
		provider = p
		return nil
	}
	// get reads path from a service's endpoint with this round's token.
	get := func(newClient func(*gophercloud.ProviderClient, gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error), path string, into any) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			if provider == nil {
				return fmt.Errorf("no token this round")
			}
			c, err := newClient(provider, gophercloud.EndpointOpts{Region: r.Info.Region})
			if err != nil {
				return err
			}
			resp, err := c.Get(ctx, c.Endpoint+path, into, &gophercloud.RequestOpts{OkCodes: []int{200}})
			if resp != nil && resp.Body != nil {
				_ = resp.Body.Close()
			}
			if err != nil {
				return fmt.Errorf("GET %s%s: %w", c.Endpoint, path, err)
			}
			return nil
		}
	}
	var services struct {
		Services []struct {
			Binary, Host, State, Status string
			UpdatedAt                   string `json:"updated_at"`
		} `json:"services"`
	}
	return []HealthCheck{
		{"processes", r.checkProcesses},
		{"mariadb", func(ctx context.Context) error { _, err := r.SQL(ctx, "SELECT 1"); return err }},
		{"rabbitmq", checkAMQP},
		{"ovn-northd", r.checkNorthd},
		{"keystone", token},
		{"nova-api", get(openstack.NewComputeV2, "flavors?limit=1", nil)},
		{"neutron-server", get(openstack.NewNetworkV2, "v2.0/networks?limit=1", nil)},
		{"octavia-api", get(openstack.NewLoadBalancerV2, "v2/lbaas/loadbalancers?limit=1", nil)},
		{"placement", get(openstack.NewPlacementV1, "resource_providers", nil)},
		{"nova-compute", func(ctx context.Context) error {
			services.Services = nil
			if err := get(openstack.NewComputeV2, "os-services?binary=nova-compute", &services)(ctx); err != nil {
				return err
			}
			var down []string
			for _, s := range services.Services {
				// Nova's time, in UTC without a zone.
				at, err := time.Parse("2006-01-02T15:04:05.999999", s.UpdatedAt)
				switch {
				case s.State != "up":
					down = append(down, s.Host+" "+s.State)
				case err != nil:
					down = append(down, fmt.Sprintf("%s updated_at %q", s.Host, s.UpdatedAt))
				case at.Before(since.Add(-time.Second)):
					down = append(down, fmt.Sprintf("%s has not reported since %s (last %s)", s.Host, since.UTC().Format(time.TimeOnly), at.Format(time.TimeOnly)))
				}
			}
			if len(services.Services) == 0 || len(down) > 0 {
				return fmt.Errorf("nova-compute services not up: %v (of %d)", down, len(services.Services))
			}
			return nil
		}},
	}
}

// checkProcesses: every service hack/realcloud started has a live,
// not stopped, process in its group.
func (r *RealCloud) checkProcesses(context.Context) error {
	names, err := filepath.Glob(filepath.Join(r.Dir, "pids", "*"))
	if err != nil {
		return err
	}
	var bad []string
	p := realCloudProcesses{dir: r.Dir}
	for _, path := range names {
		name := filepath.Base(path)
		pid, err := p.pid(name)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		states := groupStates(pid)
		if len(states) == 0 {
			bad = append(bad, name+" has no process")
			continue
		}
		for _, s := range states {
			if s == 'T' {
				bad = append(bad, name+" is stopped (SIGSTOP)")
				break
			}
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}

// checkAMQP opens an AMQP 0-9-1 connection far enough for RabbitMQ to
// send its Connection.Start method frame (frame type 1).
func checkAMQP(ctx context.Context) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(RealCloudIP, "5672"))
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("AMQP\x00\x00\x09\x01")); err != nil {
		return err
	}
	frame := make([]byte, 1)
	if _, err := io.ReadFull(conn, frame); err != nil {
		return fmt.Errorf("no Connection.Start: %w", err)
	}
	if frame[0] != 1 {
		return fmt.Errorf("first frame has type %d, not a method frame", frame[0])
	}
	return nil
}

// checkNorthd asks ovn-northd over its control socket whether it is the
// active instance.
func (r *RealCloud) checkNorthd(ctx context.Context) error {
	c := exec.CommandContext(ctx, "ovn-appctl", "-t", filepath.Join(r.Dir, "ovn", "northd.ctl"), "status")
	c.Env = RealCloudEnv(RealCloudIP)
	out, err := c.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ovn-appctl status: %w: %s", err, bytes.TrimSpace(out))
	}
	if !strings.Contains(string(out), "active") {
		return fmt.Errorf("ovn-northd status: %s", bytes.TrimSpace(out))
	}
	return nil
}
