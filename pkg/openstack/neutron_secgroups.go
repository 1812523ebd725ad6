package openstack

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// SecurityGroup is a Neutron security group with its rules.
type SecurityGroup struct {
	ID, Name, Description string
	Tags                  []string
	Rules                 []Rule
}

// Rule is a security group rule. ID is empty in a wanted rule.
type Rule struct {
	ID             string
	Direction      string // ingress or egress
	Ethertype      string // IPv4 or IPv6
	Protocol       string // tcp, udp, sctp
	PortMin        int
	PortMax        int
	RemoteIPPrefix string
}

// Key identifies a rule by what it does, the way Neutron refuses a
// duplicate: two rules with the same key are the same rule.
func (r Rule) Key() string {
	return fmt.Sprintf("%s/%s/%s/%d-%d/%s", r.Direction, r.Ethertype, strings.ToLower(r.Protocol), r.PortMin, r.PortMax, r.RemoteIPPrefix)
}

func toSecurityGroup(sg groups.SecGroup) SecurityGroup {
	out := SecurityGroup{ID: sg.ID, Name: sg.Name, Description: sg.Description, Tags: sg.Tags}
	for _, r := range sg.Rules {
		out.Rules = append(out.Rules, Rule{ID: r.ID, Direction: r.Direction, Ethertype: r.EtherType, Protocol: r.Protocol,
			PortMin: r.PortRangeMin, PortMax: r.PortRangeMax, RemoteIPPrefix: r.RemoteIPPrefix})
	}
	return out
}

// FindGroups lists the security groups with exactly this name, rules
// included.
func (n *Neutron) FindGroups(ctx context.Context, name string) ([]SecurityGroup, error) {
	list, err := listAll(ctx, n.caller, ServiceNetwork, "list_security_groups",
		func() pagination.Pager { return groups.List(n.client, groups.ListOpts{Name: name}) }, groups.ExtractGroups)
	if err != nil {
		return nil, err
	}
	var out []SecurityGroup
	for _, sg := range list {
		if sg.Name == name {
			out = append(out, toSecurityGroup(sg))
		}
	}
	return out, nil
}

// CreateGroup creates a security group. It is tried once (operations.go):
// a repeat of a create that did happen would make a second group of the
// name.
func (n *Neutron) CreateGroup(ctx context.Context, name, description string) (*SecurityGroup, error) {
	var sg *groups.SecGroup
	err := n.do(ctx, "create_security_group", func(ctx context.Context) error {
		var err error
		sg, err = groups.Create(ctx, n.client, groups.CreateOpts{Name: name, Description: description}).Extract()
		return err
	})
	if err != nil {
		return nil, err
	}
	out := toSecurityGroup(*sg)
	return &out, nil
}

// AddGroupTag puts one tag on a security group (Neutron's standard-attr-tag).
func (n *Neutron) AddGroupTag(ctx context.Context, id, tag string) error {
	return n.do(ctx, "add_security_group_tag", func(ctx context.Context) error {
		return attributestags.Add(ctx, n.client, "security-groups", id, tag).ExtractErr()
	})
}

// DeleteGroup deletes a group; one that is gone already is what we wanted,
// and one still on a port is a conflict (409).
func (n *Neutron) DeleteGroup(ctx context.Context, id string) error {
	return n.do(ctx, "delete_security_group", func(ctx context.Context) error {
		err := groups.Delete(ctx, n.client, id).ExtractErr()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil
		}
		return err
	})
}

// CreateRule adds a rule to a group; a rule that exists already (409, a
// repeated create) is done.
func (n *Neutron) CreateRule(ctx context.Context, groupID string, r Rule) error {
	opts := rules.CreateOpts{Direction: rules.RuleDirection(r.Direction), EtherType: rules.RuleEtherType(r.Ethertype),
		SecGroupID: groupID, Protocol: rules.RuleProtocol(r.Protocol), PortRangeMin: r.PortMin, PortRangeMax: r.PortMax,
		RemoteIPPrefix: r.RemoteIPPrefix}
	return n.do(ctx, "create_security_group_rule", func(ctx context.Context) error {
		err := rules.Create(ctx, n.client, opts).Err
		if gophercloud.ResponseCodeIs(err, http.StatusConflict) {
			return nil
		}
		return err
	})
}

// DeleteRule deletes a rule; one that is gone already is what we wanted.
func (n *Neutron) DeleteRule(ctx context.Context, id string) error {
	return n.do(ctx, "delete_security_group_rule", func(ctx context.Context) error {
		err := rules.Delete(ctx, n.client, id).ExtractErr()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil
		}
		return err
	})
}

// secGroupPortFields are the only port attributes the security group
// management reads: a subnet's port list stays small however busy the
// subnet is. Ports listed with them carry nothing else.
var secGroupPortFields = []string{"id", "device_id", "fixed_ips", "security_groups", "port_security_enabled", "revision_number"}

// fieldsQuery is a port listing with Neutron's fields parameter.
type fieldsQuery struct {
	ports.ListOpts
	fields []string
}

func (o fieldsQuery) ToPortListQuery() (string, error) {
	q, err := o.ListOpts.ToPortListQuery()
	if err != nil {
		return "", err
	}
	u, err := url.Parse(q)
	if err != nil {
		return "", err
	}
	v := u.Query()
	for _, f := range o.fields {
		v.Add("fields", f)
	}
	u.RawQuery = v.Encode()
	return u.String(), nil
}

// PortsOnSubnet lists the ports with a fixed IP on the subnet, with only
// their ID, device ID (a port is a member node's only on its server),
// fixed IPs, security groups, port security and revision.
func (n *Neutron) PortsOnSubnet(ctx context.Context, subnetID string) ([]Port, error) {
	if subnetID == "" {
		return nil, fmt.Errorf("list ports: no subnet to filter on")
	}
	return n.listPorts(ctx, fieldsQuery{ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{SubnetID: subnetID}}}, secGroupPortFields})
}

// PortsWithGroup lists the ports that carry the security group, with the
// fields of PortsOnSubnet.
func (n *Neutron) PortsWithGroup(ctx context.Context, groupID string) ([]Port, error) {
	if groupID == "" {
		return nil, fmt.Errorf("list ports: no security group to filter on")
	}
	return n.listPorts(ctx, fieldsQuery{ports.ListOpts{SecurityGroups: []string{groupID}}, secGroupPortFields})
}

// SetPortGroups replaces a port's security groups if the port is still at
// revision (ErrConflict if not).
func (n *Neutron) SetPortGroups(ctx context.Context, portID string, groupIDs []string, revision int) error {
	return n.updatePort(ctx, portID, ports.UpdateOpts{SecurityGroups: &groupIDs, RevisionNumber: &revision})
}
