package loadbalancer

import (
	"context"

	"github.com/stackward/stackward/pkg/openstack"
)

var (
	_ Octavia        = (*openstack.Octavia)(nil)
	_ Neutron        = (*openstack.Neutron)(nil)
	_ SecurityGroups = (*openstack.Neutron)(nil)
)

// Octavia is the part of the load-balancer API the orchestration uses.
// Every method is one API call except Tree, which reads a load balancer's
// children in as few calls as the API allows.
type Octavia interface {
	// FindLoadBalancers lists the load balancers with exactly this name
	// that carry tag.
	FindLoadBalancers(ctx context.Context, name, tag string) ([]LoadBalancer, error)
	// ListLoadBalancers lists the load balancers that carry tag.
	ListLoadBalancers(ctx context.Context, tag string) ([]LoadBalancer, error)
	// LoadBalancersOnPort lists the load balancers whose VIP is the port.
	LoadBalancersOnPort(ctx context.Context, portID string) ([]LoadBalancer, error)
	// CreateLoadBalancer creates the whole tree in one fully populated call.
	CreateLoadBalancer(ctx context.Context, spec Spec) (*LoadBalancer, error)
	// DeleteLoadBalancer deletes a load balancer and its children (cascade).
	DeleteLoadBalancer(ctx context.Context, id string) error
	// Tree reads the listeners, pools, members and monitors of an ACTIVE
	// load balancer.
	Tree(ctx context.Context, lbID string) (*Tree, error)
	// GetLoadBalancer reads one load balancer; a 404 wraps
	// openstack.ErrNotFound.
	GetLoadBalancer(ctx context.Context, id string) (*LoadBalancer, error)
	// SetLoadBalancerTags replaces a load balancer's tags (shared.go).
	SetLoadBalancerTags(ctx context.Context, id string, tags []string) error
	// The Rename calls change names, descriptions and tags only (rename.go).
	RenameLoadBalancer(ctx context.Context, id, name, description string, tags []string) error
	RenameListener(ctx context.Context, id, name string, tags []string) error
	RenamePool(ctx context.Context, id, name string) error
	RenameMonitor(ctx context.Context, id, name string) error

	CreateListener(ctx context.Context, lbID string, spec ListenerSpec) error
	UpdateListener(ctx context.Context, id string, spec ListenerSpec) error
	DeleteListener(ctx context.Context, id string) error
	CreatePool(ctx context.Context, listenerID string, spec PoolSpec) error
	UpdatePool(ctx context.Context, id string, spec PoolSpec) error
	// SetPoolTags replaces a pool's tags (ovnmonitors.go).
	SetPoolTags(ctx context.Context, id string, tags []string) error
	DeletePool(ctx context.Context, id string) error
	// SetMembers replaces a pool's members in one batch call.
	SetMembers(ctx context.Context, poolID string, members []Member) error
	CreateMonitor(ctx context.Context, poolID string, spec MonitorSpec) error
	UpdateMonitor(ctx context.Context, id string, spec MonitorSpec) error
	DeleteMonitor(ctx context.Context, id string) error
}

// Neutron is the part of the network API the orchestration uses: floating
// IPs for the VIP, and lookups to fill in what the config leaves out.
type Neutron interface {
	// FloatingIPs lists floating IPs attached to portID, or (portID empty)
	// with the given address.
	FloatingIPs(ctx context.Context, portID, address string) ([]FloatingIP, error)
	CreateFloatingIP(ctx context.Context, fip FloatingIP) (*FloatingIP, error)
	// AttachFloatingIP points a floating IP at a port; "" detaches it.
	AttachFloatingIP(ctx context.Context, id, portID string) error
	DeleteFloatingIP(ctx context.Context, id string) error
	// ExternalNetworks returns the IDs of the router:external networks.
	ExternalNetworks(ctx context.Context) ([]string, error)
	// SubnetOfAddress returns the subnet of the port holding a fixed IP.
	SubnetOfAddress(ctx context.Context, ip string) (string, error)
	// SubnetCIDR returns a subnet's CIDR.
	SubnetCIDR(ctx context.Context, subnetID string) (string, error)
	// Subnets lists a network's subnets that pass the tag filter.
	Subnets(ctx context.Context, networkID string, filter TagFilter) ([]Subnet, error)
	// Port reads one port (a Service's port-id, portid.go); a 404 wraps
	// openstack.ErrNotFound.
	Port(ctx context.Context, id string) (*Port, error)
}

// Octavia provisioning states.
const (
	StatusActive        = "ACTIVE"
	StatusError         = "ERROR"
	StatusPendingDelete = "PENDING_DELETE"
)

// The load balancers' domain types are pkg/openstack's: one set of
// types for the adapter and the orchestration.
type (
	LoadBalancer = openstack.LoadBalancer
	Tree         = openstack.Tree
	Listener     = openstack.Listener
	Pool         = openstack.Pool
	Monitor      = openstack.Monitor
	Spec         = openstack.Spec
	VIP          = openstack.VIP
	ListenerSpec = openstack.ListenerSpec
	Timeouts     = openstack.Timeouts
	PoolSpec     = openstack.PoolSpec
	Member       = openstack.Member
	MonitorSpec  = openstack.MonitorSpec
)

// FloatingIP is a Neutron floating IP.
type FloatingIP = openstack.FloatingIP
