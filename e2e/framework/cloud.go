package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stackward/stackward/internal/cloudsim"
)

// CloudIP is where the simulated OpenStack listens inside the lab.
const CloudIP = "198.18.254.1"

// Lab cloud names: the project's tenant network carries the node addresses,
// the external network hands out floating IPs from TEST-NET-3.
const (
	LabNetwork      = "lab"
	FloatingNetwork = "public"
	LabRegion       = "RegionOne"
)

// SimCloud is a stackward-cloudsim serving inside the lab.
type SimCloud struct {
	Sim     *cloudsim.Sim
	AuthURL string
}

// SimCloudOptions tune the simulated cloud.
type SimCloudOptions struct {
	TokenTTL     time.Duration
	OctaviaDelay time.Duration
	Latency      time.Duration
	// DualStack adds an IPv6 subnet (NodeNetworkV6) to the lab network.
	DualStack bool
	// WithoutServices are catalog service types the cloud's catalog
	// leaves out (cloudsim.Options.WithoutServices).
	WithoutServices []string
}

// ApproverUser is the lab's read-only cloud user, for the approver.
const ApproverUser = "stackward-approver"

// LabSeed is the lab's cloud: one project, a CCM and an approver user, three flavors, two
// availability zones, the node network and a floating network.
func LabSeed() *cloudsim.Seed {
	return &cloudsim.Seed{
		Projects: []cloudsim.SeedProject{{Name: "lab"}},
		// Least privilege: the CCM writes (Octavia, floating IPs, routes) with
		// member; the approver only reads with reader.
		Users: []cloudsim.SeedUser{
			{Name: "stackward", Password: "lab-password", Project: "lab", Roles: []string{cloudsim.RoleMember}},
			{Name: ApproverUser, Password: "approver-password", Project: "lab", Roles: []string{cloudsim.RoleReader}},
		},
		Flavors: []cloudsim.SeedFlavor{
			{Name: "m1.small", VCPUs: 1, RAM: 2048, Disk: 20},
			{Name: "m1.medium", VCPUs: 2, RAM: 4096, Disk: 40},
			{Name: "m1.large", VCPUs: 4, RAM: 8192, Disk: 80},
		},
		AvailabilityZones: []string{"az-1", "az-2"},
		Networks: []cloudsim.SeedNetwork{
			{Name: LabNetwork, Subnets: []cloudsim.SeedSubnet{{Name: "lab-v4", CIDR: NodeNetwork.String(), Gateway: "198.18.0.1"}}},
			{Name: FloatingNetwork, External: true, Subnets: []cloudsim.SeedSubnet{{Name: "public-v4", CIDR: "203.0.113.0/24"}}},
		},
		Routers: []cloudsim.SeedRouter{{Name: "lab-router", ExternalNetwork: FloatingNetwork, Interfaces: []string{LabNetwork}}},
	}
}

// StartSimCloud serves a simulated OpenStack on CloudIP (a port of its own per
// call) until the test ends.
func StartSimCloud(t testing.TB, opts SimCloudOptions) *SimCloud {
	t.Helper()
	c, stop, err := NewSimCloud(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return c
}

// NewSimCloud serves a simulated OpenStack on CloudIP until stop is called.
func NewSimCloud(opts SimCloudOptions) (*SimCloud, func(), error) {
	if err := AddAddress(CloudIP); err != nil {
		return nil, nil, err
	}
	seed := LabSeed()
	if opts.DualStack {
		for i := range seed.Networks {
			if seed.Networks[i].Name == LabNetwork {
				seed.Networks[i].Subnets = append(seed.Networks[i].Subnets, cloudsim.SeedSubnet{Name: "lab-v6", CIDR: NodeNetworkV6.String()})
			}
		}
	}
	sim, err := cloudsim.New(cloudsim.Options{
		Seed:            seed,
		TokenTTL:        opts.TokenTTL,
		WithoutServices: opts.WithoutServices,
		OctaviaDelay:    opts.OctaviaDelay,
		Latency:         opts.Latency,
		Region:          LabRegion,
		Registry:        prometheus.NewRegistry(),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cloudsim: %w", err)
	}
	authURL, stop, err := sim.Start(CloudIP + ":0")
	if err != nil {
		return nil, nil, fmt.Errorf("cloudsim: %w", err)
	}
	return &SimCloud{Sim: sim, AuthURL: authURL}, func() { stop(); sim.Close() }, nil
}

// CloudConf writes a cloud.conf for the lab cloud (upstream OpenStack CCM
// keys) with extra lines appended, and returns its path.
func (c *SimCloud) CloudConf(t testing.TB, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cloud.conf")
	if err := c.WriteCloudConf(path, extra); err != nil {
		t.Fatal(err)
	}
	return path
}

// ReaderCloudConf is CloudConf for the lab's read-only (reader) user: the
// approver, and a CCM without load balancers or routes.
func (c *SimCloud) ReaderCloudConf(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cloud.conf")
	if err := c.writeCloudConf(path, ApproverUser, "approver-password", ""); err != nil {
		t.Fatal(err)
	}
	return path
}

// WriteCloudConf writes the lab cloud's cloud.conf (the CCM's user) to path.
func (c *SimCloud) WriteCloudConf(path, extra string) error {
	return c.writeCloudConf(path, "stackward", "lab-password", extra)
}

func (c *SimCloud) writeCloudConf(path, user, password, extra string) error {
	return writeLabCloudConf(path, c.AuthURL, user, password, extra)
}

// writeLabCloudConf writes the lab's cloud.conf for either backend: the same
// project, region and floating network names on both.
func writeLabCloudConf(path, authURL, user, password, extra string) error {
	conf := fmt.Sprintf(`[Global]
auth-url = %s
region = %s
username = %s
password = %s
user-domain-name = Default
tenant-name = lab
tenant-domain-name = Default

[Networking]
public-network-name = %s
%s`, authURL, LabRegion, user, password, FloatingNetwork, extra)
	return os.WriteFile(path, []byte(conf), 0o600)
}

// CreateServer adds a server on the lab network with the i-th node address.
func (c *SimCloud) CreateServer(t testing.TB, name string, i int, flavor, az string) cloudsim.Server {
	t.Helper()
	srv, err := c.Sim.CreateServer(cloudsim.ServerSpec{
		Name: name, Flavor: flavor, AZ: az,
		NICs: []cloudsim.NICSpec{{Network: LabNetwork, FixedIP: NodeIP(i)}},
	})
	if err != nil {
		t.Fatalf("create server %s: %v", name, err)
	}
	return srv
}

// CreateDualStackServer is CreateServer with the i-th node's IPv6 address
// too (a SimCloudOptions.DualStack cloud).
func (c *SimCloud) CreateDualStackServer(t testing.TB, name string, i int, flavor, az string) cloudsim.Server {
	t.Helper()
	srv, err := c.Sim.CreateServer(cloudsim.ServerSpec{
		Name: name, Flavor: flavor, AZ: az,
		NICs: []cloudsim.NICSpec{{Network: LabNetwork, FixedIP: NodeIP(i), FixedIPv6: NodeIPv6(i)}},
	})
	if err != nil {
		t.Fatalf("create server %s: %v", name, err)
	}
	return srv
}
