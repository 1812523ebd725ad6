package framework

import (
	"testing"

	"github.com/stackward/stackward/internal/cloudsim"
)

// TestCloud is what a cloud-facing e2e test needs from its cloud, whichever
// backend serves it: stackward-cloudsim (SimTestCloud) or real OpenStack services
// in the lab (RealCloud). A test written against it runs on both; fault
// injection needs the simulator itself and stays on *SimCloud.
type TestCloud interface {
	// Name is "cloudsim" or "openstack", for subtest names.
	Name() string
	// KeystoneURL is the Keystone v3 endpoint the CCM authenticates against.
	KeystoneURL() string
	// CloudConf writes a cloud.conf for the CCM's user (member) with extra
	// lines appended and returns its path.
	CloudConf(t testing.TB, extra string) string
	// ReaderCloudConf writes a cloud.conf for the read-only approver user.
	ReaderCloudConf(t testing.TB) string
	// CreateServer boots an ACTIVE server on the lab network whose fixed IP
	// is NodeIP(i).
	CreateServer(t testing.TB, name string, i int, flavor, az string) TestServer
	// GetServer reads the server back; found is false only when the cloud
	// says it does not exist (any other failure fails the test).
	GetServer(t testing.TB, id string) (srv TestServer, found bool)
	// AttachFloatingIP allocates a floating IP on FloatingNetwork, associates
	// it with the server's port and returns its address.
	AttachFloatingIP(t testing.TB, serverID string) string
	// DetachFloatingIP disassociates and releases one of its floating IPs.
	DetachFloatingIP(t testing.TB, serverID, ip string)
	// StopServer shuts the server off and returns once it is SHUTOFF.
	StopServer(t testing.TB, id string)
	// StartServer starts it again and returns once it is ACTIVE.
	StartServer(t testing.TB, id string)
	// DeleteServer deletes it and returns once the cloud no longer has it.
	DeleteServer(t testing.TB, id string)
}

// TestServer is a server as a test sees it, on either backend.
type TestServer struct {
	ID, Name, Status string
	Flavor, AZ       string
	// FixedIPs and FloatingIPs are the server's addresses as Nova reports
	// them, in Nova's order.
	FixedIPs, FloatingIPs []string
}

// SimTestCloud is the cloudsim backend of TestCloud: a *SimCloud seen through the
// backend-neutral interface (the *SimCloud keeps its simulator-only methods).
type SimTestCloud struct{ SimCloud *SimCloud }

var _ TestCloud = SimTestCloud{}

// TestCloud returns the simulator as a TestCloud.
func (c *SimCloud) TestCloud() SimTestCloud { return SimTestCloud{SimCloud: c} }

// Name implements TestCloud.
func (SimTestCloud) Name() string { return "cloudsim" }

// KeystoneURL implements TestCloud.
func (s SimTestCloud) KeystoneURL() string { return s.SimCloud.AuthURL }

// CloudConf implements TestCloud.
func (s SimTestCloud) CloudConf(t testing.TB, extra string) string {
	return s.SimCloud.CloudConf(t, extra)
}

// ReaderCloudConf implements TestCloud.
func (s SimTestCloud) ReaderCloudConf(t testing.TB) string { return s.SimCloud.ReaderCloudConf(t) }

// CreateServer implements TestCloud.
func (s SimTestCloud) CreateServer(t testing.TB, name string, i int, flavor, az string) TestServer {
	t.Helper()
	return simServer(s.SimCloud.CreateServer(t, name, i, flavor, az))
}

// GetServer implements TestCloud.
func (s SimTestCloud) GetServer(t testing.TB, id string) (TestServer, bool) {
	srv, ok := s.SimCloud.Sim.GetServer(id)
	if !ok {
		return TestServer{}, false
	}
	return simServer(srv), true
}

// AttachFloatingIP implements TestCloud.
func (s SimTestCloud) AttachFloatingIP(t testing.TB, serverID string) string {
	t.Helper()
	ip, err := s.SimCloud.Sim.AttachFloatingIP(serverID, FloatingNetwork)
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

// DetachFloatingIP implements TestCloud.
func (s SimTestCloud) DetachFloatingIP(t testing.TB, serverID, ip string) {
	t.Helper()
	if err := s.SimCloud.Sim.DetachFloatingIP(serverID, ip); err != nil {
		t.Fatal(err)
	}
}

// StopServer implements TestCloud: the simulator switches at once.
func (s SimTestCloud) StopServer(t testing.TB, id string) {
	t.Helper()
	if err := s.SimCloud.Sim.SetServerStatus(id, "SHUTOFF"); err != nil {
		t.Fatal(err)
	}
}

// StartServer implements TestCloud.
func (s SimTestCloud) StartServer(t testing.TB, id string) {
	t.Helper()
	if err := s.SimCloud.Sim.SetServerStatus(id, "ACTIVE"); err != nil {
		t.Fatal(err)
	}
}

// DeleteServer implements TestCloud.
func (s SimTestCloud) DeleteServer(t testing.TB, id string) {
	t.Helper()
	if err := s.SimCloud.Sim.DeleteServer(id); err != nil {
		t.Fatal(err)
	}
}

func simServer(srv cloudsim.Server) TestServer {
	out := TestServer{ID: srv.ID, Name: srv.Name, Status: srv.Status, Flavor: srv.Flavor, AZ: srv.AZ}
	for _, a := range srv.Addresses {
		if a.Type == "floating" {
			out.FloatingIPs = append(out.FloatingIPs, a.IP)
		} else {
			out.FixedIPs = append(out.FixedIPs, a.IP)
		}
	}
	return out
}
