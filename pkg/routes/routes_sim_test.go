package routes

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
)

// The cloud's side of the routes (router revisions, port revisions and
// their 412s, allowed address pairs as Neutron stores them) comes from the
// simulator through pkg/openstack's real adapter; the hand fake in
// routes_test.go stays for the ledger logic and call assertions.

const simRouter = "router-1"

type simCloud struct {
	neutron *openstack.Neutron
	raw     *gophercloud.ServiceClient // reads and writes behind the adapter's back
	server  string                     // node-a's server ID
	port    ports.Port                 // node-a's port, as seeded
	sim     *cloudsim.Sim
}

func newSimCloud(t *testing.T) simCloud {
	t.Helper()
	sd := cloudsim.DefaultSeed()
	sd.Routers[0].ID = simRouter
	sd.Routers[0].Routes = []cloudsim.Route{{Destination: theirs.Destination, NextHop: theirs.NextHop}}
	sd.Servers = []cloudsim.ServerSpec{{Name: "node-a", Flavor: "m1.small", NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: podRoute.NextHop}}}}
	sim, err := cloudsim.New(cloudsim.Options{Seed: sd, RandSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	authURL, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	cfg := config.Defaults()
	cfg.Global = config.Global{AuthURL: authURL, Username: "demo", Password: "secret", TenantName: "demo", DomainName: "Default"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	clients, err := openstack.NewClients(ctx, cfg, openstack.ClientOptions{HTTPTimeout: 5 * time.Second,
		Retry: openstack.RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := clients.NeutronClient()
	if err != nil {
		t.Fatal(err)
	}
	c := simCloud{neutron: clients.Neutron, raw: raw, sim: sim, server: sim.Servers()[0].ID}
	pages, err := ports.List(raw, ports.ListOpts{DeviceID: c.server}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	list, err := ports.ExtractPorts(pages)
	if err != nil || len(list) != 1 {
		t.Fatalf("ports of node-a: %v, %v", list, err)
	}
	c.port = list[0]
	return c
}

// pairs reads the port's allowed address pairs as Neutron has them.
func (c simCloud) pairs(t *testing.T) []Pair {
	t.Helper()
	p, err := ports.Get(context.Background(), c.raw, c.port.ID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	out := []Pair{}
	for _, a := range p.AllowedAddressPairs {
		out = append(out, Pair{IPAddress: a.IPAddress, MACAddress: a.MACAddress})
	}
	return out
}

// setPairs writes the port's pairs as another writer (an operator, VRRP).
func (c simCloud) setPairs(t *testing.T, pairs []Pair) {
	t.Helper()
	ap := []ports.AddressPair{}
	for _, p := range pairs {
		ap = append(ap, ports.AddressPair{IPAddress: p.IPAddress, MACAddress: p.MACAddress})
	}
	if err := ports.Update(context.Background(), c.raw, c.port.ID, ports.UpdateOpts{AllowedAddressPairs: &ap}).Err; err != nil {
		t.Fatal(err)
	}
}

// routes reads the router's routes, sorted by destination.
func (c simCloud) routes(t *testing.T) []Route {
	t.Helper()
	r, err := routers.Get(context.Background(), c.raw, simRouter).Extract()
	if err != nil {
		t.Fatal(err)
	}
	out := []Route{}
	for _, x := range r.Routes {
		out = append(out, Route{Destination: x.DestinationCIDR, NextHop: x.NextHop})
	}
	slices.SortFunc(out, func(a, b Route) int { return strings.Compare(a.Destination, b.Destination) })
	return out
}

// plainExtraRoute hides extraroute-atomic, so the routes rewrite the whole
// list compare-and-swap; beforeSet runs once before the first rewrite.
type plainExtraRoute struct {
	*openstack.Neutron
	beforeSet func()
}

func (p *plainExtraRoute) Extensions(ctx context.Context) ([]string, error) {
	exts, err := p.Neutron.Extensions(ctx)
	return slices.DeleteFunc(exts, func(e string) bool { return e == "extraroute-atomic" }), err
}

func (p *plainExtraRoute) SetRoutes(ctx context.Context, routerID string, routes []Route, revision int) error {
	if f := p.beforeSet; f != nil {
		p.beforeSet = nil
		f()
	}
	return p.Neutron.SetRoutes(ctx, routerID, routes, revision)
}

// racingPort lets another writer change the port between our read and our
// first write.
type racingPort struct {
	*openstack.Neutron
	race func()
}

func (r *racingPort) SetAllowedAddressPairs(ctx context.Context, portID string, pairs []Pair, revision int) error {
	if f := r.race; f != nil {
		r.race = nil
		f()
	}
	return r.Neutron.SetAllowedAddressPairs(ctx, portID, pairs, revision)
}

func TestRoutesAgainstTheSimulator(t *testing.T) {
	ctx := context.Background()
	for _, atomic := range []bool{true, false} {
		name := map[bool]string{true: "extraroute-atomic", false: "plain extraroute"}[atomic]
		t.Run("with "+name+" a route and its pair come and go together and nothing else changes", func(t *testing.T) {
			c := newSimCloud(t)
			others := []Pair{vrrp, {IPAddress: "192.0.2.7", MACAddress: "fa:16:3e:11:11:11"}}
			c.setPairs(t, others)
			var net Neutron = c.neutron
			if !atomic {
				net = &plainExtraRoute{Neutron: c.neutron}
			}
			r, err := NewWithNeutron(ctx, net, newLedger(), simRouter)
			if err != nil {
				t.Fatal(err)
			}
			if r.Atomic() != atomic {
				t.Errorf("atomic %v, want %v", r.Atomic(), atomic)
			}
			if err := r.Add(ctx, podRoute, "a", c.server); err != nil {
				t.Fatal(err)
			}
			want := append(slices.Clone(others), Pair{IPAddress: podRoute.Destination, MACAddress: c.port.MACAddress})
			if got := c.pairs(t); !slices.Equal(got, want) {
				t.Errorf("pairs %v, want %v", got, want)
			}
			if got := c.routes(t); !slices.Equal(got, []Route{podRoute, theirs}) {
				t.Errorf("routes %v, want ours and theirs", got)
			}
			if err := r.Remove(ctx, podRoute); err != nil {
				t.Fatal(err)
			}
			if got := c.pairs(t); !slices.Equal(got, others) {
				t.Errorf("after remove: pairs %v, want %v", got, others)
			}
			if got := c.routes(t); !slices.Equal(got, []Route{theirs}) {
				t.Errorf("after remove: routes %v, want only theirs", got)
			}
		})
	}
	t.Run("a pair another writer adds between our read and write survives (412, read again)", func(t *testing.T) {
		c := newSimCloud(t)
		net := &racingPort{Neutron: c.neutron, race: func() { c.setPairs(t, []Pair{vrrp}) }}
		r, err := NewWithNeutron(ctx, net, newLedger(), simRouter)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Add(ctx, podRoute, "a", c.server); err != nil {
			t.Fatal(err)
		}
		want := []Pair{vrrp, {IPAddress: podRoute.Destination, MACAddress: c.port.MACAddress}}
		if got := c.pairs(t); !slices.Equal(got, want) {
			t.Errorf("pairs %v, want %v", got, want)
		}
	})
	t.Run("without extraroute-atomic a concurrent route change is kept (412, read again)", func(t *testing.T) {
		c := newSimCloud(t)
		other := Route{Destination: "198.19.132.0/24", NextHop: "10.0.0.8"}
		net := &plainExtraRoute{Neutron: c.neutron, beforeSet: func() {
			rs := []routers.Route{{DestinationCIDR: theirs.Destination, NextHop: theirs.NextHop}, {DestinationCIDR: other.Destination, NextHop: other.NextHop}}
			if err := routers.Update(ctx, c.raw, simRouter, routers.UpdateOpts{Routes: &rs}).Err; err != nil {
				t.Error(err)
			}
		}}
		r, err := NewWithNeutron(ctx, net, newLedger(), simRouter)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Add(ctx, podRoute, "a", c.server); err != nil {
			t.Fatal(err)
		}
		if got := c.routes(t); !slices.Equal(got, []Route{podRoute, theirs, other}) {
			t.Errorf("routes %v, want ours, theirs and the concurrent one", got)
		}
	})
	t.Run("a route Neutron refuses rolls the address pair back", func(t *testing.T) {
		c := newSimCloud(t)
		r, err := NewWithNeutron(ctx, c.neutron, newLedger(), simRouter)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.sim.SetFault(cloudsim.FaultRule{Service: "network", Operation: "routers.add_extraroutes", Status: 400}); err != nil {
			t.Fatal(err)
		}
		if err := r.Add(ctx, podRoute, "a", c.server); err == nil {
			t.Fatal("Add succeeded")
		}
		c.sim.ClearFaults()
		if got := c.pairs(t); len(got) != 0 {
			t.Errorf("left behind: pairs %v", got)
		}
		if got := c.routes(t); !slices.Equal(got, []Route{theirs}) {
			t.Errorf("routes %v, want only theirs", got)
		}
	})
}
