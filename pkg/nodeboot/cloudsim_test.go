package nodeboot

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stackward/stackward/internal/cloudsim"
)

// These tests read what stackward-cloudsim serves and writes, so that
// stackward-node and the simulator (and through it the CCM and the approver,
// which read the same servers and ports) agree on who a node is.

type simCloud struct {
	sim  *cloudsim.Sim
	base string // metadata service base URL
}

func startCloud(t *testing.T) *simCloud {
	t.Helper()
	sd := cloudsim.DefaultSeed()
	sd.Networks = append(sd.Networks,
		// Servers owning loopback addresses let the test be identified by
		// its source address, as each lab node is by its 198.18.x.y.
		cloudsim.SeedNetwork{Name: "lab", Subnets: []cloudsim.SeedSubnet{{CIDR: "127.0.0.0/8", Gateway: "127.255.255.254"}}},
		cloudsim.SeedNetwork{Name: "storage", Subnets: []cloudsim.SeedSubnet{{CIDR: "192.168.50.0/24"}}},
		cloudsim.SeedNetwork{Name: "private6", Subnets: []cloudsim.SeedSubnet{{CIDR: "fd00:10::/64", IPVersion: 6}}},
	)
	sd.Servers = []cloudsim.ServerSpec{
		{Name: "node-1", NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: "10.0.0.11", FloatingNetwork: "public"}}},
		{Name: "node-2", NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: "10.0.0.12"}}},
		// The loopback address identifies the caller; it is never a node IP.
		{Name: "lab-1", NICs: []cloudsim.NICSpec{{Network: "lab", FixedIP: "127.0.0.21"}, {Network: "private", FixedIP: "10.0.0.21"}}},
		{Name: "lab-2", NICs: []cloudsim.NICSpec{{Network: "lab", FixedIP: "127.0.0.22"}, {Network: "private", FixedIP: "10.0.0.22"}}},
		{Name: "multi", NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: "10.0.0.31"}, {Network: "storage", FixedIP: "192.168.50.31"}}},
		{Name: "dual", NICs: []cloudsim.NICSpec{{Network: "private6"}, {Network: "private", FixedIP: "10.0.0.41"}}},
	}
	sim, err := cloudsim.New(cloudsim.Options{Seed: sd})
	if err != nil {
		t.Fatal(err)
	}
	authURL, stop, err := sim.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return &simCloud{sim: sim, base: strings.TrimSuffix(authURL, "/v3")}
}

func (c *simCloud) server(t *testing.T, name string) cloudsim.Server {
	t.Helper()
	sv, ok := c.sim.ServerByName(name)
	if !ok {
		t.Fatalf("no server %s in the simulator", name)
	}
	return sv
}

// fixedIPs are the addresses Nova reports for the server that are not floating.
func fixedIPs(sv cloudsim.Server) []string {
	var out []string
	for _, a := range sv.Addresses {
		if a.Type == "fixed" {
			out = append(out, a.IP)
		}
	}
	return out
}

func TestAgainstCloudsimMetadataService(t *testing.T) {
	c := startCloud(t)
	for _, tc := range []struct {
		name     string
		server   string
		byHeader bool
		mutate   func(*Config, *simCloud)
		want     string
	}{
		{name: "instance chosen by header gets its fixed IP, not its floating IP", server: "node-1", byHeader: true, want: "10.0.0.11"},
		{name: "instance chosen by source address", server: "lab-1", want: "10.0.0.21"},
		{name: "another instance by source address", server: "lab-2", want: "10.0.0.22"},
		{name: "second network chosen by CIDR preference", server: "multi", byHeader: true, want: "192.168.50.31",
			mutate: func(cfg *Config, _ *simCloud) { cfg.PreferCIDRs = []string{"192.168.0.0/16"} }},
		{name: "second network chosen by Neutron network ID", server: "multi", byHeader: true, want: "192.168.50.31",
			mutate: func(cfg *Config, c *simCloud) { cfg.Network = networkIDOf(t, c, "multi", "192.168.50.31") }},
		{name: "dual-stack instance gives IPv4 then IPv6", server: "dual", byHeader: true,
			mutate: func(cfg *Config, _ *simCloud) { cfg.IPFamily = string(Dual) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sv := c.server(t, tc.server)
			cfg := testConfig(c.base)
			if tc.byHeader {
				cfg.MetadataInstanceID = sv.ID
			} else {
				cfg.MetadataSourceIP = fixedIPs(sv)[0]
			}
			if tc.mutate != nil {
				tc.mutate(&cfg, c)
			}
			s, err := Resolve(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if s.ProviderID != "openstack:///"+sv.ID || s.Instance.Meta.Name != sv.Name || s.Instance.Meta.AvailabilityZone != sv.AZ {
				t.Errorf("got providerID %s name %s AZ %s; the simulator has %s %s %s",
					s.ProviderID, s.Instance.Meta.Name, s.Instance.Meta.AvailabilityZone, sv.ID, sv.Name, sv.AZ)
			}
			// Every chosen IP is one Nova reports as the server's fixed
			// address: the approver will accept it in a serving CSR.
			for _, ip := range s.NodeIPs {
				if !slices.Contains(fixedIPs(sv), ip.String()) {
					t.Errorf("node IP %s is not among the server's fixed IPs %v", ip, fixedIPs(sv))
				}
			}
			if tc.want != "" && s.NodeIP() != tc.want {
				t.Errorf("node IP = %s, want %s", s.NodeIP(), tc.want)
			}
			if IPFamily(cfg.IPFamily) == Dual && (len(s.NodeIPs) != 2 || !s.NodeIPs[0].Is4() || !s.NodeIPs[1].Is6()) {
				t.Errorf("dual-stack node IP = %s", s.NodeIP())
			}
		})
	}
}

// networkIDOf finds the Neutron network of one of the server's addresses
// through network_data.json's own answer, as an operator would.
func networkIDOf(t *testing.T, c *simCloud, server, ip string) string {
	t.Helper()
	cfg := testConfig(c.base)
	cfg.MetadataInstanceID = c.server(t, server).ID
	ms, err := newMetadataService(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := ms.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range inst.Network.Networks {
		if n.IPAddress == ip {
			return n.NetworkID
		}
	}
	t.Fatalf("no network of %s holds %s", server, ip)
	return ""
}

func TestAgainstCloudsimConfigDrive(t *testing.T) {
	c := startCloud(t)
	node1, node2 := c.server(t, "node-1"), c.server(t, "node-2")
	drive1, drive2 := t.TempDir(), t.TempDir()
	if err := c.sim.WriteConfigDrive(node1.ID, drive1); err != nil {
		t.Fatal(err)
	}
	if err := c.sim.WriteConfigDrive(node2.ID, drive2); err != nil {
		t.Fatal(err)
	}

	t.Run("the config drive alone gives the same settings as the metadata service", func(t *testing.T) {
		cfg := testConfig("")
		cfg.SearchOrder = []string{SourceConfigDrive}
		cfg.ConfigDriveDir = drive1
		s, err := Resolve(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if s.ProviderID != "openstack:///"+node1.ID || s.NodeIP() != "10.0.0.11" {
			t.Errorf("got %s %s", s.ProviderID, s.NodeIP())
		}
	})
	t.Run("config drive and metadata service of the same server agree", func(t *testing.T) {
		cfg := testConfig(c.base)
		cfg.SearchOrder = []string{SourceConfigDrive, SourceMetadataService}
		cfg.ConfigDriveDir = drive1
		cfg.MetadataInstanceID = node1.ID
		if _, err := Resolve(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a config drive of another server is refused", func(t *testing.T) {
		cfg := testConfig(c.base)
		cfg.SearchOrder = []string{SourceMetadataService, SourceConfigDrive}
		cfg.ConfigDriveDir = drive2
		cfg.MetadataInstanceID = node1.ID
		_, err := Resolve(context.Background(), cfg)
		if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), node1.ID) || !strings.Contains(err.Error(), node2.ID) {
			t.Fatalf("err = %v, want an inconsistency naming both IDs", err)
		}
	})
}

func TestAgainstCloudsimFailures(t *testing.T) {
	c := startCloud(t)
	node1 := c.server(t, "node-1")

	t.Run("an address no server owns is refused by the metadata service", func(t *testing.T) {
		cfg := testConfig(c.base)
		cfg.MetadataSourceIP = "127.0.0.99"
		_, err := Resolve(context.Background(), cfg)
		if !errors.Is(err, ErrSourceUnavailable) || !strings.Contains(err.Error(), "HTTP 404") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("503s from the metadata service are retried", func(t *testing.T) {
		t.Cleanup(c.sim.ClearFaults)
		if err := c.sim.SetFault(cloudsim.FaultRule{Service: cloudsim.ServiceMetadata, Status: 503, Times: 2}); err != nil {
			t.Fatal(err)
		}
		cfg := testConfig(c.base)
		cfg.MetadataInstanceID = node1.ID
		s, err := Resolve(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if s.ProviderID != "openstack:///"+node1.ID {
			t.Errorf("provider ID %s", s.ProviderID)
		}
	})
	t.Run("a hanging metadata service is given up on in bounded time", func(t *testing.T) {
		t.Cleanup(c.sim.ClearFaults)
		if err := c.sim.SetFault(cloudsim.FaultRule{Service: cloudsim.ServiceMetadata, Hang: true}); err != nil {
			t.Fatal(err)
		}
		cfg := testConfig(c.base)
		cfg.MetadataInstanceID = node1.ID
		cfg.Attempts = 2
		start := time.Now()
		_, err := Resolve(context.Background(), cfg)
		if !errors.Is(err, ErrSourceUnavailable) {
			t.Fatalf("err = %v", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("took %s", d)
		}
	})
	t.Run("the node IP of a dual-stack request on an IPv4-only server is refused", func(t *testing.T) {
		cfg := testConfig(c.base)
		cfg.MetadataInstanceID = node1.ID
		cfg.IPFamily = string(IPv6)
		_, err := Resolve(context.Background(), cfg)
		if !errors.Is(err, ErrNoAddress) || !strings.Contains(err.Error(), "no ipv6 address") {
			t.Fatalf("err = %v", err)
		}
	})
}
