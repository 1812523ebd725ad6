package cloudsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// bigSeed is the default cloud with n servers on a /16.
func bigSeed(n int) *Seed {
	sd := DefaultSeed()
	sd.Networks[0].Subnets[0].CIDR = "10.0.0.0/16"
	for i := 0; i < n; i++ {
		sd.Servers = append(sd.Servers, ServerSpec{Name: fmt.Sprintf("node-%05d", i), NICs: []NICSpec{{Network: "private"}}})
	}
	return sd
}

func TestTenThousandServersStayFast(t *testing.T) {
	start := time.Now()
	sim, authURL := startSim(t, Options{Seed: bigSeed(10000)})
	if el := time.Since(start); el > raceSlowdown*20*time.Second {
		t.Fatalf("seeding 10,000 servers took %v", el)
	}
	compute := computeClient(t, authURL)
	start = time.Now()
	pages, err := servers.List(compute, servers.ListOpts{}).AllPages(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	all, _ := servers.ExtractServers(pages)
	if len(all) != 10000 {
		t.Fatalf("listed %d servers, want 10000", len(all))
	}
	if el := time.Since(start); el > raceSlowdown*20*time.Second {
		t.Fatalf("listing 10,000 servers took %v", el)
	}
	// Nova's max_limit is 1000 and a full page always carries a next link,
	// so the client reads 10 full pages and one empty one.
	if n := sim.Calls()["compute.servers.detail"]; n != 11 {
		t.Fatalf("%d detail pages, want 11", n)
	}
	node, _ := sim.ServerByName("node-09999")
	net, _ := openstack.NewNetworkV2(provider(t, demoAuth(authURL)), gophercloudRegion())
	start = time.Now()
	for i := 0; i < 100; i++ {
		p, err := ports.List(net, ports.ListOpts{DeviceID: node.ID}).AllPages(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if ps, _ := ports.ExtractPorts(p); len(ps) != 1 {
			t.Fatalf("ports of %s: %d", node.ID, len(ps))
		}
	}
	if el := time.Since(start); el > raceSlowdown*5*time.Second {
		t.Fatalf("100 port lookups by device took %v", el)
	}
}

// BenchmarkListServers10k measures the simulator itself (not gophercloud's
// decoding): all 10,000 servers in detail, paged as Nova pages them.
func BenchmarkListServers10k(b *testing.B) {
	_, authURL := startSim(b, Options{Seed: bigSeed(10000)})
	compute := computeClient(b, authURL)
	tok := compute.ProviderClient.Token()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		next, n := compute.ServiceURL("servers", "detail"), 0
		for next != "" {
			req, _ := http.NewRequestWithContext(ctxT(b), "GET", next, nil)
			req.Header.Set("X-Auth-Token", tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			var page struct {
				Servers []struct {
					ID string `json:"id"`
				} `json:"servers"`
				Links []struct {
					Href string `json:"href"`
				} `json:"servers_links"`
			}
			err = json.NewDecoder(resp.Body).Decode(&page)
			resp.Body.Close()
			if err != nil {
				b.Fatal(err)
			}
			n += len(page.Servers)
			next = ""
			if len(page.Links) > 0 {
				next = page.Links[0].Href
			}
		}
		if n != 10000 {
			b.Fatalf("listed %d", n)
		}
	}
	b.ReportMetric(float64(b.N*10000)/b.Elapsed().Seconds(), "servers/s")
}

// BenchmarkTokenIssue measures password authentication round trips.
func BenchmarkTokenIssue(b *testing.B) {
	_, authURL := startSim(b, Options{})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		provider(b, demoAuth(authURL))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
