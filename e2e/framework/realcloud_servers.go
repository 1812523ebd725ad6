package framework

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/apimachinery/pkg/util/wait"
)

// RealCloud is the real-OpenStack backend of TestCloud. It acts as the lab's
// operator (member and admin of project lab): the servers it creates belong
// to the cluster's project, as the VMs of a real cluster would.
type RealCloud struct {
	Info RealCloudInfo
	// Dir holds the services' configuration, state and logs (Dir/log).
	Dir string
	// StartupTime is how long the bring-up took.
	StartupTime time.Duration

	compute, network *gophercloud.ServiceClient

	mu    sync.Mutex
	ports map[string]string // server ID → the port created for it
}

var _ TestCloud = (*RealCloud)(nil)

// realCloudOperator is the lab user that creates and changes servers for the tests.
const realCloudOperator = "lab-operator"

func newRealCloud(ctx context.Context, dir string, info RealCloudInfo) (*RealCloud, error) {
	op, ok := info.Users[realCloudOperator]
	if !ok {
		return nil, fmt.Errorf("real cloud: cloud.json has no user %s", realCloudOperator)
	}
	provider, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: info.AuthURL,
		Username:         realCloudOperator,
		Password:         op.Password,
		DomainName:       "Default",
		Scope:            &gophercloud.AuthScope{ProjectName: op.Project, DomainName: "Default"},
		AllowReauth:      true,
	})
	if err != nil {
		return nil, fmt.Errorf("real cloud: authenticate %s: %w", realCloudOperator, err)
	}
	eo := gophercloud.EndpointOpts{Region: info.Region}
	compute, err := openstack.NewComputeV2(provider, eo)
	if err != nil {
		return nil, fmt.Errorf("real cloud: compute endpoint: %w", err)
	}
	// 2.47: the server carries its flavor's name (what the CCM labels).
	compute.Microversion = "2.47"
	network, err := openstack.NewNetworkV2(provider, eo)
	if err != nil {
		return nil, fmt.Errorf("real cloud: network endpoint: %w", err)
	}
	return &RealCloud{Info: info, Dir: dir, compute: compute, network: network, ports: map[string]string{}}, nil
}

// Name implements TestCloud.
func (*RealCloud) Name() string { return "openstack" }

// KeystoneURL implements TestCloud.
func (r *RealCloud) KeystoneURL() string { return r.Info.AuthURL }

// CloudConf implements TestCloud: the CCM's user (member, load-balancer_member).
func (r *RealCloud) CloudConf(t testing.TB, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cloud.conf")
	if err := writeLabCloudConf(path, r.Info.AuthURL, "stackward", r.Info.Users["stackward"].Password, extra); err != nil {
		t.Fatal(err)
	}
	return path
}

// ReaderCloudConf implements TestCloud: the approver's reader.
func (r *RealCloud) ReaderCloudConf(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cloud.conf")
	if err := writeLabCloudConf(path, r.Info.AuthURL, ApproverUser, r.Info.Users[ApproverUser].Password, ""); err != nil {
		t.Fatal(err)
	}
	return path
}

// LogsHint names where the services' logs are, for failure messages.
func (r *RealCloud) LogsHint() string { return "real cloud logs: " + filepath.Join(r.Dir, "log") }

// CreateServer implements TestCloud: a port with the chosen fixed IP on the
// lab network first (as an operator would), then a server booted on it.
func (r *RealCloud) CreateServer(t testing.TB, name string, i int, flavor, az string) TestServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	flavorID, ok := r.Info.Flavors[flavor]
	if !ok {
		t.Fatalf("real cloud has no flavor %q (has %v)", flavor, r.Info.Flavors)
	}
	lab := r.Info.Networks[LabNetwork]
	port, err := ports.Create(ctx, r.network, ports.CreateOpts{
		Name:      name + "-port",
		NetworkID: lab.ID,
		FixedIPs:  []ports.IP{{SubnetID: lab.SubnetID, IPAddress: NodeIP(i)}},
	}).Extract()
	if err != nil {
		t.Fatalf("create port for server %s with %s: %v", name, NodeIP(i), err)
	}
	// The lab's chassis loop brings up only the ports a "hypervisor" plugged:
	// this server's NIC (see hack/realcloud/chassis-loop.sh).
	if err := r.plug(port.ID); err != nil {
		_ = ports.Delete(ctx, r.network, port.ID).ExtractErr()
		t.Fatalf("plug port of server %s: %v", name, err)
	}
	srv, err := servers.Create(ctx, r.compute, servers.CreateOpts{
		Name:             name,
		FlavorRef:        flavorID,
		ImageRef:         r.Info.Image.ID,
		AvailabilityZone: az,
		Networks:         []servers.Network{{Port: port.ID}},
	}, nil).Extract()
	if err != nil {
		_ = ports.Delete(ctx, r.network, port.ID).ExtractErr()
		t.Fatalf("create server %s: %v", name, err)
	}
	r.mu.Lock()
	r.ports[srv.ID] = port.ID
	r.mu.Unlock()
	// The real cloud outlives the test: what it made goes with it, so the
	// next test can have the same fixed IP.
	t.Cleanup(func() {
		r.mu.Lock()
		_, left := r.ports[srv.ID]
		r.mu.Unlock()
		if left {
			r.DeleteServer(t, srv.ID)
		}
	})
	return r.waitServer(ctx, t, srv.ID, "ACTIVE", nil)
}

// GetServer implements TestCloud.
func (r *RealCloud) GetServer(t testing.TB, id string) (TestServer, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, found, err := r.getServer(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return srv, found
}

func (r *RealCloud) getServer(ctx context.Context, id string) (TestServer, bool, error) {
	srv, err := servers.Get(ctx, r.compute, id).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return TestServer{}, false, nil
	}
	if err != nil {
		return TestServer{}, false, fmt.Errorf("get server %s: %w", id, err)
	}
	return realServer(srv), true, nil
}

// waitServer polls until the server has status and, when cond is set,
// cond holds; a server in ERROR fails the test with Nova's fault.
func (r *RealCloud) waitServer(ctx context.Context, t testing.TB, id, status string, cond func(TestServer) bool) TestServer {
	t.Helper()
	var last TestServer
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		srv, err := servers.Get(ctx, r.compute, id).Extract()
		if err != nil {
			return false, fmt.Errorf("get server %s: %w", id, err)
		}
		last = realServer(srv)
		if srv.Status == "ERROR" && status != "ERROR" {
			return false, fmt.Errorf("server %s went to ERROR: %s (%s)", srv.Name, srv.Fault.Message, r.LogsHint())
		}
		return srv.Status == status && (cond == nil || cond(last)), nil
	})
	if err != nil {
		t.Fatalf("server %s: waiting for %s: %v (last seen %+v)", id, status, err, last)
	}
	return last
}

func (r *RealCloud) serverPort(t testing.TB, serverID string) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.ports[serverID]
	if !ok {
		t.Fatalf("server %s was not created by this RealCloud", serverID)
	}
	return id
}

// AttachFloatingIP implements TestCloud; it returns once Nova reports the
// address too (Neutron tells Nova, which refreshes the server's cache).
func (r *RealCloud) AttachFloatingIP(t testing.TB, serverID string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	fip, err := floatingips.Create(ctx, r.network, floatingips.CreateOpts{
		FloatingNetworkID: r.Info.Networks[FloatingNetwork].ID,
		PortID:            r.serverPort(t, serverID),
	}).Extract()
	if err != nil {
		t.Fatalf("attach floating IP to %s: %v", serverID, err)
	}
	r.waitServer(ctx, t, serverID, "ACTIVE", func(s TestServer) bool { return slices.Contains(s.FloatingIPs, fip.FloatingIP) })
	return fip.FloatingIP
}

// DetachFloatingIP implements TestCloud: the floating IP is released, and
// it returns once Nova no longer reports it.
func (r *RealCloud) DetachFloatingIP(t testing.TB, serverID, ip string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	pages, err := floatingips.List(r.network, floatingips.ListOpts{FloatingIP: ip, PortID: r.serverPort(t, serverID)}).AllPages(ctx)
	if err != nil {
		t.Fatalf("list floating IP %s: %v", ip, err)
	}
	fips, err := floatingips.ExtractFloatingIPs(pages)
	if err != nil || len(fips) != 1 {
		t.Fatalf("floating IP %s on server %s: %d found, %v", ip, serverID, len(fips), err)
	}
	if err := floatingips.Delete(ctx, r.network, fips[0].ID).ExtractErr(); err != nil {
		t.Fatalf("release floating IP %s: %v", ip, err)
	}
	status := "ACTIVE"
	if s, _ := r.GetServer(t, serverID); s.Status != "" {
		status = s.Status
	}
	r.waitServer(ctx, t, serverID, status, func(s TestServer) bool { return !slices.Contains(s.FloatingIPs, ip) })
}

// StopServer implements TestCloud.
func (r *RealCloud) StopServer(t testing.TB, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := servers.Stop(ctx, r.compute, id).ExtractErr(); err != nil {
		t.Fatalf("stop server %s: %v", id, err)
	}
	r.waitServer(ctx, t, id, "SHUTOFF", nil)
}

// StartServer implements TestCloud.
func (r *RealCloud) StartServer(t testing.TB, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := servers.Start(ctx, r.compute, id).ExtractErr(); err != nil {
		t.Fatalf("start server %s: %v", id, err)
	}
	r.waitServer(ctx, t, id, "ACTIVE", nil)
}

// DeleteServer implements TestCloud: once Nova no longer has the server,
// the port made for it is deleted too (Nova keeps ports it did not create),
// so its fixed IP is free for the next test.
func (r *RealCloud) DeleteServer(t testing.TB, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := servers.Delete(ctx, r.compute, id).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("delete server %s: %v", id, err)
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, found, err := r.getServer(ctx, id)
		return !found, err
	})
	if err != nil {
		t.Fatalf("server %s not gone: %v", id, err)
	}
	r.mu.Lock()
	portID, ok := r.ports[id]
	delete(r.ports, id)
	r.mu.Unlock()
	if ok {
		pages, err := floatingips.List(r.network, floatingips.ListOpts{PortID: portID}).AllPages(ctx)
		if err != nil {
			t.Fatalf("list floating IPs of port %s: %v", portID, err)
		}
		fips, err := floatingips.ExtractFloatingIPs(pages)
		if err != nil {
			t.Fatalf("list floating IPs of port %s: %v", portID, err)
		}
		for _, f := range fips {
			if err := floatingips.Delete(ctx, r.network, f.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
				t.Fatalf("release floating IP %s of server %s: %v", f.FloatingIP, id, err)
			}
		}
		if err := ports.Delete(ctx, r.network, portID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			t.Fatalf("delete port %s of server %s: %v", portID, id, err)
		}
	}
}

// realServer reads Nova's answer: addresses per network, fixed before
// floating as Nova lists them; the flavor's name (microversion 2.47).
func realServer(s *servers.Server) TestServer {
	out := TestServer{ID: s.ID, Name: s.Name, Status: s.Status, AZ: s.AvailabilityZone}
	if name, ok := s.Flavor["original_name"].(string); ok {
		out.Flavor = name
	}
	nets := make([]string, 0, len(s.Addresses))
	for n := range s.Addresses {
		nets = append(nets, n)
	}
	slices.Sort(nets)
	for _, n := range nets {
		list, _ := s.Addresses[n].([]any)
		for _, a := range list {
			m, _ := a.(map[string]any)
			ip, _ := m["addr"].(string)
			if m["OS-EXT-IPS:type"] == "floating" {
				out.FloatingIPs = append(out.FloatingIPs, ip)
			} else {
				out.FixedIPs = append(out.FixedIPs, ip)
			}
		}
	}
	return out
}

// plug records a port as a NIC of a server the lab booted, which the lab's
// chassis loop then brings up as ovn-controller would once the hypervisor
// plugged it.
func (r *RealCloud) plug(portID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(r.Dir, "plugged-ports"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, portID); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
