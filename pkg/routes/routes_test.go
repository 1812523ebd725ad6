package routes

import (
	"context"
	"errors"
	"slices"
	"testing"
)

type fakeNeutron struct {
	exts   []string
	routes []Route
	ports  map[string]*Port // by fixed IP
	calls  []string
	fail   map[string]error
}

func newFake(exts ...string) *fakeNeutron {
	return &fakeNeutron{exts: exts, ports: map[string]*Port{"10.0.0.5": {ID: "port-5"}}, fail: map[string]error{}}
}

func (f *fakeNeutron) call(name string) error { f.calls = append(f.calls, name); return f.fail[name] }

func (f *fakeNeutron) Extensions(context.Context) ([]string, error) {
	return f.exts, f.call("list_extensions")
}
func (f *fakeNeutron) RouterRoutes(context.Context, string) ([]Route, error) {
	return slices.Clone(f.routes), f.call("get_router")
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
func (f *fakeNeutron) SetRoutes(_ context.Context, _ string, rs []Route) error {
	if err := f.call("update_router"); err != nil {
		return err
	}
	f.routes = slices.Clone(rs)
	return nil
}
func (f *fakeNeutron) PortByIP(_ context.Context, ip string) (*Port, error) {
	if err := f.call("list_ports"); err != nil {
		return nil, err
	}
	p, ok := f.ports[ip]
	if !ok {
		return nil, ErrNoPort
	}
	cp := *p
	cp.AllowedAddressPairs = slices.Clone(p.AllowedAddressPairs)
	return &cp, nil
}
func (f *fakeNeutron) SetAllowedAddressPairs(_ context.Context, id string, pairs []string) error {
	if err := f.call("update_port"); err != nil {
		return err
	}
	for _, p := range f.ports {
		if p.ID == id {
			p.AllowedAddressPairs = slices.Clone(pairs)
		}
	}
	return nil
}

var podRoute = Route{Destination: "198.19.130.0/24", NextHop: "10.0.0.5"}

func TestRoutes(t *testing.T) {
	ctx := context.Background()
	t.Run("without extraroute routes are refused at start", func(t *testing.T) {
		if _, err := NewWithNeutron(ctx, newFake("router"), "r1"); !errors.Is(err, ErrNoExtraRoute) {
			t.Errorf("err %v", err)
		}
	})
	for _, ext := range []string{"extraroute-atomic", "extraroute"} {
		t.Run("with "+ext+" a route and its address pair come and go together", func(t *testing.T) {
			f := newFake("router", ext)
			r, err := NewWithNeutron(ctx, f, "r1")
			if err != nil {
				t.Fatal(err)
			}
			if r.Atomic() != (ext == "extraroute-atomic") {
				t.Errorf("atomic %v", r.Atomic())
			}
			f.calls = nil
			if err := r.Add(ctx, podRoute); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.routes, []Route{podRoute}) || !slices.Equal(f.ports["10.0.0.5"].AllowedAddressPairs, []string{podRoute.Destination}) {
				t.Errorf("routes %v pairs %v", f.routes, f.ports["10.0.0.5"].AllowedAddressPairs)
			}
			if ext == "extraroute-atomic" && !slices.Contains(f.calls, "add_extraroutes") || slices.Contains(f.calls, "update_router") == (ext == "extraroute-atomic") {
				t.Errorf("calls %v", f.calls)
			}
			if err := r.Remove(ctx, podRoute); err != nil {
				t.Fatal(err)
			}
			if len(f.routes) != 0 || len(f.ports["10.0.0.5"].AllowedAddressPairs) != 0 {
				t.Errorf("after remove: routes %v pairs %v", f.routes, f.ports["10.0.0.5"].AllowedAddressPairs)
			}
		})
	}
	t.Run("a route Neutron refuses rolls the address pair back", func(t *testing.T) {
		f := newFake("extraroute-atomic")
		r, _ := NewWithNeutron(ctx, f, "r1")
		f.fail["add_extraroutes"] = errors.New("400 nexthop not connected")
		if err := r.Add(ctx, podRoute); err == nil {
			t.Fatal("Add succeeded")
		}
		if len(f.ports["10.0.0.5"].AllowedAddressPairs) != 0 || len(f.routes) != 0 {
			t.Errorf("left behind: pairs %v routes %v", f.ports["10.0.0.5"].AllowedAddressPairs, f.routes)
		}
	})
	t.Run("a port that cannot be updated on remove puts the route back", func(t *testing.T) {
		f := newFake("extraroute-atomic")
		r, _ := NewWithNeutron(ctx, f, "r1")
		if err := r.Add(ctx, podRoute); err != nil {
			t.Fatal(err)
		}
		f.fail["update_port"] = errors.New("503")
		if err := r.Remove(ctx, podRoute); err == nil {
			t.Fatal("Remove succeeded")
		}
		if !slices.Equal(f.routes, []Route{podRoute}) {
			t.Errorf("routes %v, want the route restored", f.routes)
		}
	})
	t.Run("a route of a node whose port is gone is removed", func(t *testing.T) {
		f := newFake("extraroute-atomic")
		r, _ := NewWithNeutron(ctx, f, "r1")
		f.routes = []Route{{Destination: "198.19.131.0/24", NextHop: "10.0.0.9"}}
		if err := r.Remove(ctx, f.routes[0]); err != nil || len(f.routes) != 0 {
			t.Errorf("Remove: %v, routes %v", err, f.routes)
		}
	})
}
