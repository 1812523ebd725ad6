package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/stackward/stackward/pkg/openstack"
)

// fakeSecGroups is security groups and ports in memory, recording the
// calls, for the orchestration's logic and call budgets. What Neutron
// itself does (revisions and their 412s, a group in use) is tested against
// the simulator (secgroups_sim_test.go, secgroups_race_sim_test.go).
type fakeSecGroups struct {
	mu     sync.Mutex
	calls  []string
	groups map[string]*SecurityGroup
	ports  map[string]*fakePort
	nextID int
}

type fakePort struct {
	Port
	subnet string
}

func newFakeSecGroups() *fakeSecGroups {
	return &fakeSecGroups{groups: map[string]*SecurityGroup{}, ports: map[string]*fakePort{}}
}

// addPort adds a port of the server serverOf(ip), holding ip.
func (f *fakeSecGroups) addPort(id, subnet, ip string, groups ...string) {
	f.ports[id] = &fakePort{Port: Port{ID: id, DeviceID: serverOf(ip), FixedIPs: []openstack.FixedIP{{IPAddress: ip}}, SecurityGroups: groups, PortSecurityEnabled: true, RevisionNumber: 1}, subnet: subnet}
}

// serverOf is the fake server ID whose port holds ip.
func serverOf(ip string) string {
	return "server-" + strings.ReplaceAll(ip, ".", "-")
}

func (f *fakeSecGroups) writes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if !slices.Contains([]string{"list_security_groups", "list_ports", "get_port", "get_subnet"}, c) {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeSecGroups) id(kind string) string {
	f.nextID++
	return fmt.Sprintf("%s-%d", kind, f.nextID)
}

func (f *fakeSecGroups) FindGroups(_ context.Context, name string) ([]SecurityGroup, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "list_security_groups")
	var out []SecurityGroup
	for _, g := range f.groups {
		if g.Name == name {
			cp := *g
			cp.Rules = slices.Clone(g.Rules)
			cp.Tags = slices.Clone(g.Tags)
			out = append(out, cp)
		}
	}
	return out, nil
}

func (f *fakeSecGroups) CreateGroup(_ context.Context, name, description string) (*SecurityGroup, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "create_security_group")
	g := &SecurityGroup{ID: f.id("sg"), Name: name, Description: description}
	for _, eth := range []string{"IPv4", "IPv6"} {
		g.Rules = append(g.Rules, Rule{ID: f.id("rule"), Direction: "egress", Ethertype: eth})
	}
	f.groups[g.ID] = g
	cp := *g
	return &cp, nil
}

func (f *fakeSecGroups) AddGroupTag(_ context.Context, id, tag string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "add_security_group_tag")
	g, ok := f.groups[id]
	if !ok {
		return fmt.Errorf("security group %s: %w", id, openstack.ErrNotFound)
	}
	if !slices.Contains(g.Tags, tag) {
		g.Tags = append(g.Tags, tag)
	}
	return nil
}

func (f *fakeSecGroups) DeleteGroup(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "delete_security_group")
	for _, p := range f.ports {
		if slices.Contains(p.SecurityGroups, id) {
			return errors.New("409 SecurityGroupInUse")
		}
	}
	delete(f.groups, id)
	return nil
}

func (f *fakeSecGroups) CreateRule(_ context.Context, groupID string, r Rule) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "create_security_group_rule")
	r.ID = f.id("rule")
	f.groups[groupID].Rules = append(f.groups[groupID].Rules, r)
	return nil
}

func (f *fakeSecGroups) DeleteRule(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "delete_security_group_rule")
	for _, g := range f.groups {
		g.Rules = slices.DeleteFunc(g.Rules, func(r Rule) bool { return r.ID == id })
	}
	return nil
}

func (f *fakeSecGroups) SubnetCIDR(_ context.Context, subnetID string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "get_subnet")
	if subnetID == "subnet-nodes" {
		return "10.0.0.0/24", nil
	}
	return "", fmt.Errorf("404 subnet %s", subnetID)
}

func (f *fakeSecGroups) list(match func(p *fakePort) bool) []Port {
	var out []Port
	for _, p := range f.ports {
		if match(p) {
			cp := p.Port
			cp.SecurityGroups = slices.Clone(p.SecurityGroups)
			out = append(out, cp)
		}
	}
	return out
}

func (f *fakeSecGroups) PortsOnSubnet(_ context.Context, subnetID string) ([]Port, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "list_ports")
	return f.list(func(p *fakePort) bool { return p.subnet == subnetID }), nil
}

func (f *fakeSecGroups) PortsWithGroup(_ context.Context, groupID string) ([]Port, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "list_ports")
	return f.list(func(p *fakePort) bool { return slices.Contains(p.SecurityGroups, groupID) }), nil
}

func (f *fakeSecGroups) Port(_ context.Context, id string) (*Port, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "get_port")
	cp := f.ports[id].Port
	cp.SecurityGroups = slices.Clone(cp.SecurityGroups)
	return &cp, nil
}

func (f *fakeSecGroups) SetPortGroups(_ context.Context, portID string, groups []string, _ int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "update_port")
	f.ports[portID].SecurityGroups = slices.Clone(groups)
	return nil
}
