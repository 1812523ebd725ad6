package cloudsim

import (
	"context"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// testSeed is a small cloud with a second domain and an application credential.
func testSeed() *Seed {
	sd := DefaultSeed()
	sd.Projects = append(sd.Projects, SeedProject{Name: "ops", ID: "0f0f0f0f0f0f4f0f8f0f0f0f0f0f0f0f", Domain: "Ops"})
	sd.Users = append(sd.Users, SeedUser{Name: "operator", ID: "a1a1a1a1a1a14a1a8a1a1a1a1a1a1a1a", Domain: "Ops", Password: "pw", Project: "ops"})
	sd.ApplicationCredentials = []SeedAppCred{{ID: "ac-1", Name: "ccm", Secret: "s3cret", User: "demo"}}
	sd.AvailabilityZones = []string{"nova", "az2"}
	sd.Servers = []ServerSpec{
		{Name: "node-1", Flavor: "m1.small", Metadata: map[string]string{"role": "worker"},
			NICs: []NICSpec{{Network: "private", FixedIP: "10.0.0.11", FloatingNetwork: "public"}}},
		{Name: "node-2", Flavor: "m1.medium", AZ: "az2", NICs: []NICSpec{{Network: "private"}}},
		{Name: "master-1", Status: "SHUTOFF", NICs: []NICSpec{{Network: "private"}}},
	}
	return sd
}

// startSim runs a simulator for the test and returns it with its auth URL.
func startSim(t testing.TB, opts Options) (*Sim, string) {
	t.Helper()
	if opts.Seed == nil {
		opts.Seed = testSeed()
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	authURL, stop, err := s.Start("")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(stop)
	return s, authURL
}

func demoAuth(authURL string) gophercloud.AuthOptions {
	return gophercloud.AuthOptions{IdentityEndpoint: authURL, Username: "demo", Password: "secret",
		DomainName: "Default", TenantName: "demo", AllowReauth: true}
}

func provider(t testing.TB, ao gophercloud.AuthOptions) *gophercloud.ProviderClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pc, err := openstack.AuthenticatedClient(ctx, ao)
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	return pc
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), raceSlowdown*20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func gophercloudRegion() gophercloud.EndpointOpts {
	return gophercloud.EndpointOpts{Region: "RegionOne"}
}

// serversEach lists every server page by page with the given limit.
func serversEach(t testing.TB, c *gophercloud.ServiceClient, limit int, fn func(name string)) error {
	return servers.List(c, servers.ListOpts{Limit: limit}).EachPage(ctxT(t), func(_ context.Context, p pagination.Page) (bool, error) {
		ss, err := servers.ExtractServers(p)
		for _, s := range ss {
			fn(s.Name)
		}
		return true, err
	})
}
