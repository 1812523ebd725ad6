package loadbalancer

import (
	"context"
	"time"
)

// Octavia is the part of the load-balancer API the orchestration uses.
// Every method is one API call except Tree, which reads a load balancer's
// children in as few calls as the API allows.
type Octavia interface {
	// FindLoadBalancers lists the load balancers with exactly this name
	// that carry tag.
	FindLoadBalancers(ctx context.Context, name, tag string) ([]LoadBalancer, error)
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

	CreateListener(ctx context.Context, lbID string, spec ListenerSpec) error
	UpdateListener(ctx context.Context, id string, spec ListenerSpec) error
	DeleteListener(ctx context.Context, id string) error
	CreatePool(ctx context.Context, listenerID string, spec PoolSpec) error
	UpdatePool(ctx context.Context, id string, spec PoolSpec) error
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
	// Subnets lists a network's subnets that pass the tag filter.
	Subnets(ctx context.Context, networkID string, filter TagFilter) ([]Subnet, error)
}

// Octavia provisioning states.
const (
	StatusActive        = "ACTIVE"
	StatusError         = "ERROR"
	StatusPendingDelete = "PENDING_DELETE"
)

// LoadBalancer is an Octavia load balancer as the orchestration sees it.
type LoadBalancer struct {
	ID, Name           string
	ProvisioningStatus string
	VIPAddress         string
	VIPPortID          string
	VIPSubnetID        string
	VIPNetworkID       string
	FlavorID           string
	AvailabilityZone   string
	AdditionalVIPs     []VIP // Octavia's additional_vips
	// Provider is the Octavia provider that runs it (providers.go).
	Provider  string
	Tags      []string
	CreatedAt time.Time
}

// Tree is what exists under a load balancer.
type Tree struct {
	Listeners []Listener
	// Pools by ID; each carries its members and monitor.
	Pools map[string]*Pool
}

// Listener is an existing listener.
type Listener struct {
	ID            string
	Protocol      string
	Port          int
	DefaultPoolID string
	AllowedCIDRs  []string
	ConnLimit     int
	Timeouts      Timeouts
	Tags          []string
	TLSRef        string            // default_tls_container_ref
	InsertHeaders map[string]string // insert_headers
}

// Pool is an existing pool with its members and health monitor.
type Pool struct {
	ID          string
	Protocol    string
	Method      string
	Persistence string // session_persistence type, "" for none
	Members     []Member
	Monitor     *Monitor
}

// Monitor is an existing health monitor.
type Monitor struct {
	ID string
	MonitorSpec
}

// FloatingIP is a Neutron floating IP.
type FloatingIP struct {
	ID          string
	Address     string
	NetworkID   string
	SubnetID    string
	PortID      string
	Description string
}

// Spec is the desired load balancer of a Service.
type Spec struct {
	Name         string
	Description  string
	Tags         []string
	VIPNetworkID string
	VIPSubnetID  string
	VIPAddress   string
	// VIPPortID is an existing port for the VIP (port-id); Octavia never
	// deletes a port it did not create.
	VIPPortID string
	FlavorID  string
	Zone      string
	Provider  string
	// AdditionalVIPs are the further VIPs of a dual-stack load balancer,
	// created with it (dualstack.go).
	AdditionalVIPs []VIP
	Listeners      []ListenerSpec
	// Owner is the Service's tag on a shared load balancer and on its
	// listeners (shared.go).
	Owner string
}

// VIP is an additional VIP: an address (chosen by Octavia when empty) on
// another subnet of the primary VIP's network.
type VIP struct {
	SubnetID string
	Address  string
}

// ListenerSpec is one Service port's listener and its default pool.
type ListenerSpec struct {
	Name         string
	Protocol     string
	Port         int
	AllowedCIDRs []string // nil: no restriction
	ConnLimit    int      // -1: unlimited
	Timeouts     Timeouts
	Pool         PoolSpec
	Tags         []string // the owning Service's tag
	// TLSRef is the Barbican certificate of a TERMINATED_HTTPS listener;
	// InsertHeaders those an HTTP or TERMINATED_HTTPS one adds (tls.go).
	TLSRef        string
	InsertHeaders map[string]string
}

// Timeouts of a listener in milliseconds; zero leaves Octavia's default.
type Timeouts struct {
	ClientData, MemberConnect, MemberData, TCPInspect int
}

// PoolSpec is a listener's default pool.
type PoolSpec struct {
	Name     string
	Protocol string
	Method   string
	// Persistence is the session_persistence type: SOURCE_IP for
	// sessionAffinity ClientIP, "" for none.
	Persistence string
	Members     []Member
	Monitor     *MonitorSpec
}

// Member is a backend: a node's InternalIP on the NodePort.
type Member struct {
	Name        string
	Address     string
	Port        int
	SubnetID    string
	MonitorPort int // 0: the member port
}

// MonitorSpec is a pool's health monitor.
type MonitorSpec struct {
	Name           string
	Type           string
	Delay          int // seconds
	Timeout        int // seconds
	MaxRetries     int
	MaxRetriesDown int
	URLPath        string // HTTP only
}
