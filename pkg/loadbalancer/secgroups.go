package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/openstack"
)

// With [LoadBalancer] manage-security-groups = true every Service gets a
// Neutron security group of its own (named as the upstream CCM names it),
// opening its NodePorts (and the health check node port) to where the load
// balancer's traffic comes from, and attached to the node ports that hold
// the members' addresses (on the member nodes' own servers, see
// secgroups_ports.go). Ports are shared with the operator and with other
// Services: only our group is ever added to or removed from a port, with
// Neutron's revision_number compare-and-swap, so a concurrent change to the
// port's groups is never lost.

// SecurityGroups is the part of Neutron the security group management uses.
type SecurityGroups interface {
	// FindGroups lists the security groups with exactly this name, rules
	// included.
	FindGroups(ctx context.Context, name string) ([]SecurityGroup, error)
	CreateGroup(ctx context.Context, name, description string) (*SecurityGroup, error)
	// AddGroupTag puts one tag on a group.
	AddGroupTag(ctx context.Context, id, tag string) error
	// DeleteGroup deletes a group; a group still on a port is a conflict.
	DeleteGroup(ctx context.Context, id string) error
	CreateRule(ctx context.Context, groupID string, r Rule) error
	DeleteRule(ctx context.Context, id string) error
	// SubnetCIDR returns a subnet's CIDR.
	SubnetCIDR(ctx context.Context, subnetID string) (string, error)
	// PortsOnSubnet lists the ports with a fixed IP on the subnet.
	PortsOnSubnet(ctx context.Context, subnetID string) ([]Port, error)
	// PortsWithGroup lists the ports that carry the security group.
	PortsWithGroup(ctx context.Context, groupID string) ([]Port, error)
	// Port reads one port.
	Port(ctx context.Context, id string) (*Port, error)
	// SetPortGroups replaces a port's security groups, only while its
	// revision_number is still revision (ErrPortChanged otherwise).
	SetPortGroups(ctx context.Context, portID string, groups []string, revision int) error
}

// ErrPortChanged means a port changed between our read and our write
// (Neutron's 412 on If-Match: revision_number).
var ErrPortChanged = openstack.ErrConflict

// SecurityGroup is a Neutron security group with its rules.
type SecurityGroup = openstack.SecurityGroup

// Rule is a security group rule. ID is empty in a wanted rule.
type Rule = openstack.Rule

// Port is a Neutron port: the one Port type of pkg/openstack.
type Port = openstack.Port

// casAttempts bounds the read-modify-write retries on one port.
const casAttempts = 4

// SecurityGroupName is upstream's name for a Service's security group:
// lb-sg-<Service UID>-<namespace>-<name>, cut to Neutron's 255.
func SecurityGroupName(svc *corev1.Service) string {
	name := fmt.Sprintf("lb-sg-%s-%s-%s", svc.UID, svc.Namespace, svc.Name)
	if len(name) > maxNameLen {
		name = name[:maxNameLen]
	}
	return name
}

func securityGroupDescription(clusterName string, svc *corev1.Service) string {
	return fit(fmt.Sprintf("Security Group for %s/%s Service LoadBalancer in cluster %s", svc.Namespace, svc.Name, clusterName))
}

// wantedRules opens each NodePort (per protocol) and the health check node
// port to the sources: the members' subnet (the load balancer's amphorae
// reach the members from it), or with the OVN provider, which keeps the
// client's address, the Service's source ranges (everything by default).
func wantedRules(svc *corev1.Service, subnetCIDR string, o *options) []Rule {
	sources := []string{subnetCIDR}
	if strings.EqualFold(o.provider, "ovn") {
		sources = o.allowedCIDRs
		if len(sources) == 0 {
			sources = []string{"0.0.0.0/0", "::/0"}
		}
	}
	var out []Rule
	add := func(protocol string, port int, cidrs []string) {
		for _, c := range cidrs {
			out = append(out, Rule{Direction: "ingress", Ethertype: ethertype(c), Protocol: protocol, PortMin: port, PortMax: port, RemoteIPPrefix: c})
		}
	}
	if svc.Spec.HealthCheckNodePort != 0 {
		add("tcp", int(svc.Spec.HealthCheckNodePort), []string{subnetCIDR})
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 { // 0 with allocateLoadBalancerNodePorts: false
			add(strings.ToLower(string(p.Protocol)), int(p.NodePort), sources)
		}
	}
	slices.SortFunc(out, func(a, b Rule) int { return strings.Compare(a.Key(), b.Key()) })
	return slices.CompactFunc(out, func(a, b Rule) bool { return a.Key() == b.Key() })
}

func ethertype(cidr string) string {
	if p, err := netip.ParsePrefix(cidr); err == nil && p.Addr().Is6() {
		return "IPv6"
	}
	return "IPv4"
}

// syncSecurityGroup makes the Service's security group, its rules and its
// attachments match the members: one list of groups and one list of ports
// when nothing changed. A port that holds our group but no longer qualifies
// (a node left, or an older release trusted a node's listed address) loses
// it.
func (m *Manager) syncSecurityGroup(ctx context.Context, clusterName string, svc *corev1.Service, o *options, spec Spec, nodes []*corev1.Node) error {
	sgs := m.SecurityGroups
	if sgs == nil || !m.Config.ManageSecurityGroups {
		return nil
	}
	subnetID := o.memberSubnetID
	if subnetID == "" {
		var err error
		if subnetID, err = m.detectNodeSubnet(ctx, nodes); err != nil {
			return err
		}
	}
	cidr, err := m.subnetCIDR(ctx, subnetID)
	if err != nil {
		return err
	}
	name := SecurityGroupName(svc)
	logger := klog.FromContext(ctx).WithValues("service", refOf(svc).String(), "securityGroup", name)
	group, err := m.ownGroup(ctx, name, true)
	if err != nil {
		return err
	}
	if group == nil {
		if group, err = m.createGroup(ctx, name, securityGroupDescription(clusterName, svc)); err != nil {
			return err
		}
		logger.Info("Created security group", "id", group.ID)
	}
	if err := m.syncRules(ctx, group, wantedRules(svc, cidr, o)); err != nil {
		return err
	}
	claims := memberClaims(ctx, spec, nodes)
	ports, err := sgs.PortsOnSubnet(ctx, subnetID)
	if err != nil {
		return fmt.Errorf("list ports on subnet %s for security group %s: %w", subnetID, name, err)
	}
	for _, p := range ports {
		member := holdsMember(ctx, p, claims)
		has := slices.Contains(p.SecurityGroups, group.ID)
		switch {
		case member && !has && p.PortSecurityEnabled:
			err = m.changePortGroups(ctx, p, group.ID, true)
		case !member && has:
			err = m.changePortGroups(ctx, p, group.ID, false)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) subnetCIDR(ctx context.Context, subnetID string) (string, error) {
	m.mu.Lock()
	cidr := m.subnetCIDRs[subnetID]
	m.mu.Unlock()
	if cidr != "" {
		return cidr, nil
	}
	cidr, err := m.SecurityGroups.SubnetCIDR(ctx, subnetID)
	if err != nil {
		return "", fmt.Errorf("read subnet %s for the security group rules: %w", subnetID, err)
	}
	m.mu.Lock()
	if m.subnetCIDRs == nil {
		m.subnetCIDRs = map[string]string{}
	}
	m.subnetCIDRs[subnetID] = cidr // a subnet's CIDR never changes
	m.mu.Unlock()
	return cidr, nil
}

// findGroup returns the group of this name, nil if there is none. Several
// (a create retried after a lost answer) are a conflict an operator must
// resolve: we cannot tell which one the ports use.
func (m *Manager) findGroup(ctx context.Context, name string) (*SecurityGroup, error) {
	groups, err := m.SecurityGroups.FindGroups(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("find security group %q: %w", name, err)
	}
	switch len(groups) {
	case 0:
		return nil, nil
	case 1:
		return &groups[0], nil
	}
	ids := make([]string, 0, len(groups))
	for _, g := range groups {
		ids = append(ids, g.ID)
	}
	return nil, fmt.Errorf("several security groups are named %q (%s): delete all but one", name, strings.Join(ids, ", "))
}

// syncRules creates the missing ingress rules and deletes ingress rules no
// longer wanted. Egress rules (Neutron's defaults) are left alone.
func (m *Manager) syncRules(ctx context.Context, g *SecurityGroup, want []Rule) error {
	have := map[string]Rule{}
	for _, r := range g.Rules {
		if r.Direction == "ingress" {
			have[r.Key()] = r
		}
	}
	wanted := map[string]bool{}
	for _, r := range want {
		wanted[r.Key()] = true
		if _, ok := have[r.Key()]; ok {
			continue
		}
		if err := m.SecurityGroups.CreateRule(ctx, g.ID, r); err != nil {
			return fmt.Errorf("security group %s: create rule %s: %w", g.Name, r.Key(), err)
		}
	}
	for k, r := range have {
		if wanted[k] {
			continue
		}
		if err := m.SecurityGroups.DeleteRule(ctx, r.ID); err != nil {
			return fmt.Errorf("security group %s: delete rule %s: %w", g.Name, k, err)
		}
	}
	return nil
}

// changePortGroups adds or removes one group on a port, keeping every
// other group as it is, by compare-and-swap on the port's revision: a
// concurrent change makes us read the port again and retry.
func (m *Manager) changePortGroups(ctx context.Context, p Port, groupID string, add bool) error {
	var err error
	for range casAttempts {
		groups := slices.DeleteFunc(slices.Clone(p.SecurityGroups), func(g string) bool { return g == groupID })
		if add {
			groups = append(groups, groupID)
		}
		if slices.Equal(groups, p.SecurityGroups) {
			return nil
		}
		if err = m.SecurityGroups.SetPortGroups(ctx, p.ID, groups, p.RevisionNumber); err == nil {
			klog.FromContext(ctx).V(2).Info("Changed the security groups of a port", "port", p.ID, "group", groupID, "added", add)
			return nil
		}
		if !errors.Is(err, ErrPortChanged) {
			return fmt.Errorf("security groups of port %s: %w", p.ID, err)
		}
		fresh, gerr := m.SecurityGroups.Port(ctx, p.ID)
		if gerr != nil {
			return fmt.Errorf("security groups of port %s: read again after a concurrent change: %w", p.ID, gerr)
		}
		p = *fresh
	}
	return fmt.Errorf("security groups of port %s: gave up after %d attempts: %w", p.ID, casAttempts, err)
}

// deleteSecurityGroup takes the Service's group off every port and deletes
// it. Nothing there is nothing to do; a cloud error is never "not there".
func (m *Manager) deleteSecurityGroup(ctx context.Context, svc *corev1.Service) error {
	if m.SecurityGroups == nil || !m.Config.ManageSecurityGroups {
		return nil
	}
	name := SecurityGroupName(svc)
	group, err := m.ownGroup(ctx, name, false)
	if err != nil || group == nil {
		return err
	}
	ports, err := m.SecurityGroups.PortsWithGroup(ctx, group.ID)
	if err != nil {
		return fmt.Errorf("list ports with security group %s: %w", name, err)
	}
	for _, p := range ports {
		if err := m.changePortGroups(ctx, p, group.ID, false); err != nil {
			return err
		}
	}
	if err := m.SecurityGroups.DeleteGroup(ctx, group.ID); err != nil {
		if openstack.IsBusy(err) {
			// Neutron's SecurityGroupInUse: a port took the group since the
			// listing above. Progress: the next try lists the ports again.
			return notReady(m.requeue(), ReasonApplyingChanges, "security group %s (%s) is still on a port; taking it off and deleting it again", name, group.ID)
		}
		return fmt.Errorf("delete security group %s (%s): %w", name, group.ID, err)
	}
	klog.FromContext(ctx).Info("Deleted security group", "service", refOf(svc).String(), "securityGroup", name, "id", group.ID)
	return nil
}
