package loadbalancer

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsecurity"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/stackward/stackward/pkg/openstack"
)

var _ SecurityGroups = (*gopherSecGroups)(nil)

// gopherSecGroups is Neutron's security groups and ports through
// gophercloud, every call through the shared Caller.
type gopherSecGroups struct {
	client *gophercloud.ServiceClient
	caller *openstack.Caller
}

// NewSecurityGroups finds Neutron in the catalog of clients.
func NewSecurityGroups(clients *openstack.Clients) (SecurityGroups, error) {
	c, err := clients.NeutronClient()
	if err != nil {
		return nil, err
	}
	return &gopherSecGroups{client: c, caller: clients.Caller}, nil
}

func (g *gopherSecGroups) do(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	return g.caller.Do(ctx, openstack.ServiceNetwork, op, fn)
}

func fromGopherGroup(sg groups.SecGroup) SecurityGroup {
	out := SecurityGroup{ID: sg.ID, Name: sg.Name, Description: sg.Description}
	for _, r := range sg.Rules {
		out.Rules = append(out.Rules, Rule{ID: r.ID, Direction: r.Direction, Ethertype: r.EtherType, Protocol: r.Protocol,
			PortMin: r.PortRangeMin, PortMax: r.PortRangeMax, RemoteIPPrefix: r.RemoteIPPrefix})
	}
	return out
}

func (g *gopherSecGroups) FindGroups(ctx context.Context, name string) ([]SecurityGroup, error) {
	var list []groups.SecGroup
	err := g.do(ctx, "list_security_groups", func(ctx context.Context) error {
		pages, err := groups.List(g.client, groups.ListOpts{Name: name}).AllPages(ctx)
		if err != nil {
			return err
		}
		list, err = groups.ExtractGroups(pages)
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []SecurityGroup
	for _, sg := range list {
		if sg.Name == name {
			out = append(out, fromGopherGroup(sg))
		}
	}
	return out, nil
}

func (g *gopherSecGroups) CreateGroup(ctx context.Context, name, description string) (*SecurityGroup, error) {
	var sg *groups.SecGroup
	// The Caller retries a 5xx: if the first attempt did happen there are
	// two groups of the name, which findGroup reports rather than guess.
	err := g.do(ctx, "create_security_group", func(ctx context.Context) error {
		var err error
		sg, err = groups.Create(ctx, g.client, groups.CreateOpts{Name: name, Description: description}).Extract()
		return err
	})
	if err != nil {
		return nil, err
	}
	out := fromGopherGroup(*sg)
	return &out, nil
}

func (g *gopherSecGroups) DeleteGroup(ctx context.Context, id string) error {
	return g.do(ctx, "delete_security_group", func(ctx context.Context) error {
		err := groups.Delete(ctx, g.client, id).ExtractErr()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil // gone already: what we wanted
		}
		return err
	})
}

func (g *gopherSecGroups) CreateRule(ctx context.Context, groupID string, r Rule) error {
	opts := rules.CreateOpts{Direction: rules.RuleDirection(r.Direction), EtherType: rules.RuleEtherType(r.Ethertype),
		SecGroupID: groupID, Protocol: rules.RuleProtocol(r.Protocol), PortRangeMin: r.PortMin, PortRangeMax: r.PortMax,
		RemoteIPPrefix: r.RemoteIPPrefix}
	return g.do(ctx, "create_security_group_rule", func(ctx context.Context) error {
		err := rules.Create(ctx, g.client, opts).Err
		if gophercloud.ResponseCodeIs(err, http.StatusConflict) {
			return nil // the same rule exists already (a retried create)
		}
		return err
	})
}

func (g *gopherSecGroups) DeleteRule(ctx context.Context, id string) error {
	return g.do(ctx, "delete_security_group_rule", func(ctx context.Context) error {
		err := rules.Delete(ctx, g.client, id).ExtractErr()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil
		}
		return err
	})
}

func (g *gopherSecGroups) SubnetCIDR(ctx context.Context, subnetID string) (string, error) {
	var sn *subnets.Subnet
	err := g.do(ctx, "get_subnet", func(ctx context.Context) error {
		var err error
		sn, err = subnets.Get(ctx, g.client, subnetID).Extract()
		return err
	})
	if err != nil {
		return "", err
	}
	return sn.CIDR, nil
}

// portWithSecurity is a port with the port-security extension's field.
type portWithSecurity struct {
	ports.Port
	portsecurity.PortSecurityExt
}

func fromGopherPort(p portWithSecurity) Port {
	out := Port{ID: p.ID, SecurityGroups: p.SecurityGroups, PortSecurityEnabled: p.PortSecurityEnabled, Revision: p.RevisionNumber}
	for _, f := range p.FixedIPs {
		out.FixedIPs = append(out.FixedIPs, f.IPAddress)
	}
	return out
}

// portFields are the only port attributes the security group management
// reads: a subnet's port list stays small however busy the subnet is.
var portFields = []string{"id", "fixed_ips", "security_groups", "port_security_enabled", "revision_number"}

// portListOpts is ports.ListOpts with Neutron's fields parameter.
type portListOpts struct {
	ports.ListOpts
}

func (o portListOpts) ToPortListQuery() (string, error) {
	q, err := o.ListOpts.ToPortListQuery()
	if err != nil {
		return "", err
	}
	u, err := url.Parse(q)
	if err != nil {
		return "", err
	}
	v := u.Query()
	for _, f := range portFields {
		v.Add("fields", f)
	}
	u.RawQuery = v.Encode()
	return u.String(), nil
}

func (g *gopherSecGroups) listPorts(ctx context.Context, opts ports.ListOpts) ([]Port, error) {
	var list []portWithSecurity
	err := g.do(ctx, "list_ports", func(ctx context.Context) error {
		pages, err := ports.List(g.client, portListOpts{opts}).AllPages(ctx)
		if err != nil {
			return err
		}
		list = nil
		return ports.ExtractPortsInto(pages, &list)
	})
	if err != nil {
		return nil, err
	}
	out := make([]Port, 0, len(list))
	for _, p := range list {
		out = append(out, fromGopherPort(p))
	}
	return out, nil
}

func (g *gopherSecGroups) PortsOnSubnet(ctx context.Context, subnetID string) ([]Port, error) {
	if subnetID == "" {
		return nil, fmt.Errorf("list ports: no subnet to filter on")
	}
	return g.listPorts(ctx, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{SubnetID: subnetID}}})
}

func (g *gopherSecGroups) PortsWithGroup(ctx context.Context, groupID string) ([]Port, error) {
	if groupID == "" {
		return nil, fmt.Errorf("list ports: no security group to filter on")
	}
	return g.listPorts(ctx, ports.ListOpts{SecurityGroups: []string{groupID}})
}

func (g *gopherSecGroups) Port(ctx context.Context, id string) (*Port, error) {
	var p portWithSecurity
	err := g.do(ctx, "get_port", func(ctx context.Context) error {
		return ports.Get(ctx, g.client, id).ExtractInto(&p)
	})
	if err != nil {
		return nil, err
	}
	out := fromGopherPort(p)
	return &out, nil
}

func (g *gopherSecGroups) SetPortGroups(ctx context.Context, portID string, groupIDs []string, revision int) error {
	opts := ports.UpdateOpts{SecurityGroups: &groupIDs, RevisionNumber: &revision}
	err := g.do(ctx, "update_port", func(ctx context.Context) error {
		return ports.Update(ctx, g.client, portID, opts).Err
	})
	if gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed) {
		return fmt.Errorf("%w: %w", ErrPortChanged, err)
	}
	return err
}
