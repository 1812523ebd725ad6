package openstack

import "time"

// Server status values as Nova reports them.
const (
	StatusActive  = "ACTIVE"
	StatusBuild   = "BUILD"
	StatusShutoff = "SHUTOFF"
	StatusDeleted = "DELETED"
	StatusError   = "ERROR"
)

// Address types as Nova's OS-EXT-IPS:type reports them.
const (
	AddressFixed    = "fixed"
	AddressFloating = "floating"
)

// Server is the part of a Nova server Stackward needs.
type Server struct {
	ID               string
	Name             string
	Status           string
	TenantID         string
	FlavorName       string // flavor.original_name (microversion >= 2.47) or the flavor looked up by id
	AvailabilityZone string
	AccessIPv4       string
	AccessIPv6       string
	// Addresses maps a Neutron network name to the server's addresses on it,
	// in Nova's order.
	Addresses  map[string][]ServerAddress
	Metadata   map[string]string
	LaunchedAt time.Time
	// TaskState is OS-EXT-STS:task_state ("" when none): "deleting" or
	// "soft-deleting" while Nova tears an ACTIVE server down.
	TaskState string
}

// ServerAddress is one entry of a Nova server's "addresses".
type ServerAddress struct {
	Addr    string
	Version int    // 4 or 6
	Type    string // AddressFixed or AddressFloating
	MAC     string
}

// PortStatusActive is a Neutron port's status once it is bound and up.
const PortStatusActive = "ACTIVE"

// Port is the part of a Neutron port Stackward needs.
type Port struct {
	ID                  string
	Name                string
	NetworkID           string
	DeviceID            string
	DeviceOwner         string
	ProjectID           string
	MACAddress          string
	FixedIPs            []FixedIP
	AllowedAddressPairs []AddressPair
	// SecurityGroups, PortSecurityEnabled (port_security_enabled) and
	// RevisionNumber (for compare-and-swap updates with If-Match) are read
	// by the load balancers' security groups and the routes.
	SecurityGroups      []string
	PortSecurityEnabled bool
	RevisionNumber      int
	// Status is Neutron's (ACTIVE, DOWN, BUILD, ...). A port becomes ACTIVE
	// only once it is bound to a host and the backend reports it up; a port
	// a project member creates with a server's device_id stays DOWN.
	Status string
	// BindingHostID is binding:host_id. Neutron's default policy shows it
	// to administrators only: BindingHostKnown says whether the answer
	// carried it at all (an empty, shown value means "not bound").
	BindingHostID    string
	BindingHostKnown bool
}

// HasFixedIP reports whether ip is one of the port's fixed IPs.
func (p *Port) HasFixedIP(ip string) bool {
	for _, f := range p.FixedIPs {
		if f.IPAddress == ip {
			return true
		}
	}
	return false
}

// FixedIP is one fixed IP of a port.
type FixedIP struct {
	SubnetID  string
	IPAddress string
}

// AddressPair is one allowed_address_pairs entry of a port.
type AddressPair struct {
	IPAddress  string
	MACAddress string
}

// ListServersOpts filters a server listing. Empty fields do not filter.
type ListServersOpts struct {
	// Name is a regular expression, as Nova interprets it.
	Name   string
	Status string
}
