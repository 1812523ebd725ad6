package routes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/stackward/stackward/pkg/openstack"
)

// fakeNeutron keeps routes and ports in memory and records the calls, for
// the ledger's logic and failures at a given call. What Neutron itself
// does (revisions and their 412s, how it stores address pairs) is tested
// against the simulator in routes_sim_test.go.
type fakeNeutron struct {
	exts   []string
	routes []Route
	ports  map[string]*Port // by ID
	calls  []string
	fail   map[string]error
}

const (
	serverA = "server-a"
	macA    = "fa:16:3e:00:00:05"
)

func newFake(exts ...string) *fakeNeutron {
	return &fakeNeutron{exts: exts, fail: map[string]error{}, ports: map[string]*Port{
		"port-5": {ID: "port-5", DeviceID: serverA, MACAddress: macA, FixedIPs: []openstack.FixedIP{{IPAddress: "10.0.0.5"}}, RevisionNumber: 1},
	}}
}

func (f *fakeNeutron) call(name string) error { f.calls = append(f.calls, name); return f.fail[name] }

func (f *fakeNeutron) Extensions(context.Context) ([]string, error) {
	return f.exts, f.call("list_extensions")
}
func (f *fakeNeutron) RouterRoutes(context.Context, string) ([]Route, int, error) {
	return slices.Clone(f.routes), 0, f.call("get_router")
}
func (f *fakeNeutron) AddRoutes(_ context.Context, _ string, rs []Route) error {
	if err := f.call("add_extraroutes"); err != nil {
		return err
	}
	for _, r := range rs {
		if !slices.Contains(f.routes, r) {
			f.routes = append(f.routes, r)
		}
	}
	return nil
}
func (f *fakeNeutron) RemoveRoutes(_ context.Context, _ string, rs []Route) error {
	if err := f.call("remove_extraroutes"); err != nil {
		return err
	}
	f.routes = slices.DeleteFunc(f.routes, func(r Route) bool { return slices.Contains(rs, r) })
	return nil
}
func (f *fakeNeutron) SetRoutes(_ context.Context, _ string, rs []Route, _ int) error {
	if err := f.call("update_router"); err != nil {
		return err
	}
	f.routes = slices.Clone(rs)
	return nil
}
func clonePort(p *Port) Port {
	cp := *p
	cp.FixedIPs = slices.Clone(p.FixedIPs)
	cp.AllowedAddressPairs = slices.Clone(p.AllowedAddressPairs)
	return cp
}
func (f *fakeNeutron) ListPorts(_ context.Context, id string) ([]Port, error) {
	if err := f.call("list_ports"); err != nil {
		return nil, err
	}
	var out []Port
	for _, p := range f.ports {
		if p.DeviceID == id {
			out = append(out, clonePort(p))
		}
	}
	return out, nil
}
func (f *fakeNeutron) Port(_ context.Context, id string) (*Port, error) {
	if err := f.call("get_port"); err != nil {
		return nil, err
	}
	p, ok := f.ports[id]
	if !ok {
		return nil, fmt.Errorf("port %s: %w", id, openstack.ErrNotFound)
	}
	cp := clonePort(p)
	return &cp, nil
}
func (f *fakeNeutron) SetAllowedAddressPairs(_ context.Context, id string, pairs []Pair, _ int) error {
	if err := f.call("update_port"); err != nil {
		return err
	}
	f.ports[id].AllowedAddressPairs = slices.Clone(pairs)
	return nil
}

func newLedger() *ConfigMapLedger {
	c := kubefake.NewClientset()
	return &ConfigMapLedger{Client: func() (kubernetes.Interface, error) { return c, nil }, Namespace: "kube-system", Name: DefaultLedgerName}
}

var (
	podRoute = Route{Destination: "198.19.130.0/24", NextHop: "10.0.0.5"}
	// vrrp is someone else's pair on the node's port: same CIDR, other MAC.
	vrrp = Pair{IPAddress: "198.19.130.0/24", MACAddress: "fa:16:3e:99:99:99"}
	// theirs is another cluster's route on the shared router.
	theirs = Route{Destination: "198.19.131.0/24", NextHop: "10.0.0.9"}
)

func TestRoutes(t *testing.T) {
	ctx := context.Background()
	t.Run("without extraroute routes are refused at start", func(t *testing.T) {
		if _, err := NewWithNeutron(ctx, newFake("router"), newLedger(), "r1"); !errors.Is(err, ErrNoExtraRoute) {
			t.Errorf("err %v", err)
		}
	})
	t.Run("a route this cluster did not make is never removed", func(t *testing.T) {
		f := newFake("extraroute-atomic")
		f.routes = []Route{theirs, podRoute}
		r, _ := NewWithNeutron(ctx, f, newLedger(), "r1")
		for _, rt := range []Route{theirs, podRoute} {
			if err := r.Remove(ctx, rt); !errors.Is(err, ErrNotOwned) {
				t.Errorf("Remove(%v) = %v, want ErrNotOwned", rt, err)
			}
		}
		if len(f.routes) != 2 || slices.Contains(f.calls, "remove_extraroutes") || slices.Contains(f.calls, "update_port") {
			t.Errorf("routes %v calls %v", f.routes, f.calls)
		}
	})
	t.Run("the pair comes off only the port it went on, while that port is still the server's", func(t *testing.T) {
		f := newFake("extraroute-atomic")
		r, _ := NewWithNeutron(ctx, f, newLedger(), "r1")
		if err := r.Add(ctx, podRoute, "a", serverA); err != nil {
			t.Fatal(err)
		}
		// The server is deleted and another cluster's server gets the
		// address on a new port that happens to carry the same pair.
		delete(f.ports, "port-5")
		f.ports["port-9"] = &Port{ID: "port-9", DeviceID: "server-of-another-cluster", MACAddress: "fa:16:3e:00:00:09",
			FixedIPs:            []openstack.FixedIP{{IPAddress: "10.0.0.5"}},
			AllowedAddressPairs: []Pair{{IPAddress: podRoute.Destination, MACAddress: "fa:16:3e:00:00:09"}}, RevisionNumber: 3}
		before := len(f.calls)
		if err := r.Remove(ctx, podRoute); err != nil {
			t.Fatal(err)
		}
		if len(f.routes) != 0 || len(f.ports["port-9"].AllowedAddressPairs) != 1 || slices.Contains(f.calls[before:], "update_port") {
			t.Errorf("routes %v, other port %+v, calls %v", f.routes, f.ports["port-9"], f.calls)
		}
	})
	t.Run("a pair is never added to a port of another server holding the address", func(t *testing.T) {
		f := newFake("extraroute-atomic")
		f.ports["port-5"].DeviceID = "server-of-another-cluster"
		r, _ := NewWithNeutron(ctx, f, newLedger(), "r1")
		if err := r.Add(ctx, podRoute, "a", serverA); !errors.Is(err, ErrNoPort) {
			t.Errorf("Add = %v, want ErrNoPort", err)
		}
		if len(f.routes) != 0 || len(f.ports["port-5"].AllowedAddressPairs) != 0 {
			t.Errorf("routes %v pairs %v", f.routes, f.ports["port-5"].AllowedAddressPairs)
		}
	})
	t.Run("a port that cannot be updated on remove puts the route back", func(t *testing.T) {
		f := newFake("extraroute-atomic")
		r, _ := NewWithNeutron(ctx, f, newLedger(), "r1")
		if err := r.Add(ctx, podRoute, "a", serverA); err != nil {
			t.Fatal(err)
		}
		f.fail["update_port"] = errors.New("503")
		if err := r.Remove(ctx, podRoute); err == nil {
			t.Fatal("Remove succeeded")
		}
		if !slices.Equal(f.routes, []Route{podRoute}) {
			t.Errorf("routes %v, want the route restored", f.routes)
		}
		if owned, _ := r.List(ctx); len(owned) != 1 {
			t.Errorf("ledger %+v, want the route still ours", owned)
		}
	})
	t.Run("a cloud error reading the port is not 'gone': the route stays", func(t *testing.T) {
		f := newFake("extraroute-atomic")
		r, _ := NewWithNeutron(ctx, f, newLedger(), "r1")
		if err := r.Add(ctx, podRoute, "a", serverA); err != nil {
			t.Fatal(err)
		}
		f.fail["get_port"] = errors.New("500")
		if err := r.Remove(ctx, podRoute); err == nil || !slices.Equal(f.routes, []Route{podRoute}) {
			t.Errorf("Remove = %v, routes %v", err, f.routes)
		}
	})
}
