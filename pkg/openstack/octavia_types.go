package openstack

import "time"

// LoadBalancer is an Octavia load balancer as the load balancers see it.
type LoadBalancer struct {
	ID, Name           string
	Description        string
	ProvisioningStatus string
	VIPAddress         string
	VIPPortID          string
	VIPSubnetID        string
	VIPNetworkID       string
	FlavorID           string
	AvailabilityZone   string
	AdditionalVIPs     []VIP // Octavia's additional_vips
	// Provider is the Octavia provider that runs it (pkg/loadbalancer/providers.go).
	Provider  string
	Tags      []string
	CreatedAt time.Time
	// UpdatedAt is Octavia's time of its last change; zero if none since
	// it was created.
	UpdatedAt time.Time
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
	Name          string
	Protocol      string
	Port          int
	DefaultPoolID string
	AllowedCIDRs  []string
	ConnLimit     int
	Timeouts      Timeouts
	Tags          []string
	TLSRef        string            // default_tls_container_ref
	InsertHeaders map[string]string // insert_headers
	// ProvisioningStatus is Octavia's: ACTIVE, PENDING_CREATE, ...
	ProvisioningStatus string
}

// Pool is an existing pool with its members and health monitor.
type Pool struct {
	ID          string
	Name        string
	Protocol    string
	Method      string
	Persistence string // session_persistence type, "" for none
	Members     []Member
	Monitor     *Monitor
	Tags        []string
}

// Monitor is an existing health monitor.
type Monitor struct {
	ID string
	MonitorSpec
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
	// created with it (pkg/loadbalancer/dualstack.go).
	AdditionalVIPs []VIP
	Listeners      []ListenerSpec
	// Owner is the Service's tag on a shared load balancer and on its
	// listeners (pkg/loadbalancer/shared.go).
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
	// InsertHeaders those an HTTP or TERMINATED_HTTPS one adds (pkg/loadbalancer/tls.go).
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
