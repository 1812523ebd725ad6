package loadbalancer

import (
	"context"
	"slices"
)

// The fake's side of rename.go's calls.

func (f *fakeOctavia) RenameLoadBalancer(_ context.Context, id, name, description string, tags []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("update_loadbalancer"); err != nil {
		return err
	}
	return f.mutate(id, func(l *fakeLB) error {
		l.lb.Name, l.lb.Description, l.lb.Tags = name, description, slices.Clone(tags)
		return nil
	})
}

func (f *fakeOctavia) RenameListener(_ context.Context, id, name string, tags []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("update_listener"); err != nil {
		return err
	}
	return f.mutate(f.lbOfListener(id), func(l *fakeLB) error {
		for i := range l.tree.Listeners {
			if x := &l.tree.Listeners[i]; x.ID == id {
				x.Name, x.Tags = name, slices.Clone(tags)
			}
		}
		return nil
	})
}

func (f *fakeOctavia) RenamePool(_ context.Context, id, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("update_pool"); err != nil {
		return err
	}
	return f.mutate(f.lbOfPool(id), func(l *fakeLB) error { l.tree.Pools[id].Name = name; return nil })
}

func (f *fakeOctavia) RenameMonitor(_ context.Context, id, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("update_healthmonitor"); err != nil {
		return err
	}
	pid := f.monitorPool(id)
	return f.mutate(f.lbOfPool(pid), func(l *fakeLB) error { l.tree.Pools[pid].Monitor.Name = name; return nil })
}
