// Package config reads Stackward's cloud configuration: the cloud.conf file
// of the upstream OpenStack cloud-controller-manager (same sections, same
// keys, so users can bring their file unchanged) and, when use-clouds is set,
// a clouds.yaml.
//
// Reading happens in stages so that a user sees every problem in one run:
// Parse checks syntax and value types, the secret files and clouds.yaml are
// merged in, then Validate checks the result as a whole. Each stage collects
// its problems and returns them joined (errors.Join), each naming the file,
// the section and the key. Keys Stackward does not know are warnings, not
// errors: an upstream file may carry keys for features we do not have.
package config

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"time"
)

// Config is the whole cloud configuration.
type Config struct {
	Global       Global
	Networking   Networking
	Metadata     Metadata
	LoadBalancer LoadBalancer
	Route        Route

	// Source names the file the configuration was read from; messages use it.
	Source string
}

// Global is the [Global] section: where the cloud is and how to log in.
type Global struct {
	AuthURL  string // auth-url
	Region   string // region
	Username string // username
	Password string // password (or password-file)
	UserID   string // user-id

	UserDomainName string // user-domain-name
	UserDomainID   string // user-domain-id
	// DomainID and DomainName are the default domain of both the user and
	// the project, and the scope when no project is given (as in Keystone
	// clients and gophercloud-utils).
	DomainID   string // domain-id
	DomainName string // domain-name

	TenantID         string // tenant-id or project-id
	TenantName       string // tenant-name or project-name
	TenantDomainID   string // tenant-domain-id or project-domain-id
	TenantDomainName string // tenant-domain-name or project-domain-name

	ApplicationCredentialID     string // application-credential-id
	ApplicationCredentialName   string // application-credential-name
	ApplicationCredentialSecret string // application-credential-secret (or application-credential-secret-file)

	// TrustID scopes the token to a Keystone trust (as Magnum sets it up);
	// TrusteeID and TrusteePassword then stand in for user-id and password.
	TrustID         string // trust-id
	TrusteeID       string // trustee-id
	TrusteePassword string // trustee-password

	// Token is a Keystone token (upstream PR 2964) standing for the user:
	// the clients re-scope it to the project (or domain) and, since a token
	// cannot be renewed without credentials, work until it expires unless
	// a new one is written into the file (CredentialWatch).
	Token string // token

	CAFile      string // ca-file
	CertFile    string // cert-file
	KeyFile     string // key-file
	TLSInsecure bool   // tls-insecure

	// EndpointType is the catalog interface to use: public (default),
	// internal or admin.
	EndpointType string // os-endpoint-type

	UseClouds  bool   // use-clouds
	CloudsFile string // clouds-file
	Cloud      string // cloud

	// PasswordFile and ApplicationCredentialSecretFile name files holding
	// the secret, so that it can live in a Secret volume apart from the
	// rest of the configuration. A file wins over nothing, never over an
	// inline value (setting both is an error).
	PasswordFile                    string // password-file
	ApplicationCredentialSecretFile string // application-credential-secret-file
}

// String prints the section with its secrets redacted, so that logging a
// Config (even with %+v) never leaks a password.
func (g Global) String() string {
	type plain Global // no String method: no recursion
	cp := plain(g)
	for _, secret := range []*string{&cp.Password, &cp.ApplicationCredentialSecret, &cp.TrusteePassword, &cp.Token} {
		if *secret != "" {
			*secret = "REDACTED"
		}
	}
	return fmt.Sprintf("%+v", cp)
}

// Networking is the [Networking] section: which server addresses a Node gets.
type Networking struct {
	// InternalNetworkNames, when set, are the only networks whose fixed
	// addresses become InternalIPs.
	InternalNetworkNames []string // internal-network-name (repeatable)
	// PublicNetworkNames are networks whose fixed addresses are ExternalIPs.
	PublicNetworkNames  []string       // public-network-name (repeatable)
	IPv6SupportDisabled bool           // ipv6-support-disabled
	AddressSortOrder    []netip.Prefix // address-sort-order, comma-separated CIDRs
}

// Metadata is the [Metadata] section: how a node finds out who it is.
type Metadata struct {
	SearchOrder    []string      // search-order: configDrive and/or metadataService
	RequestTimeout time.Duration // request-timeout
}

// Metadata sources of search-order.
const (
	MetadataConfigDrive     = "configDrive"
	MetadataMetadataService = "metadataService"
)

// LoadBalancer is the [LoadBalancer] section (Octavia). It is parsed and
// validated now so that upstream files are accepted; the service controller
// uses it.
type LoadBalancer struct {
	Enabled                bool          // enabled (default true)
	LBVersion              string        // lb-version (accepted, only v2 exists)
	SubnetID               string        // subnet-id
	MemberSubnetID         string        // member-subnet-id
	NetworkID              string        // network-id
	FloatingNetworkID      string        // floating-network-id
	FloatingSubnetID       string        // floating-subnet-id
	FloatingSubnet         string        // floating-subnet
	LBMethod               string        // lb-method; empty: the provider's (ROUND_ROBIN, SOURCE_IP_PORT for ovn)
	LBProvider             string        // lb-provider
	CreateMonitor          bool          // create-monitor
	MonitorDelay           time.Duration // monitor-delay (default 5s)
	MonitorTimeout         time.Duration // monitor-timeout (default 3s)
	MonitorMaxRetries      int           // monitor-max-retries (default 1)
	MonitorMaxRetriesDown  int           // monitor-max-retries-down (default 3)
	ManageSecurityGroups   bool          // manage-security-groups
	InternalLB             bool          // internal-lb
	CascadeDelete          bool          // cascade-delete (default true)
	FlavorID               string        // flavor-id
	AvailabilityZone       string        // availability-zone
	MaxSharedLB            int           // max-shared-lb (default 2)
	EnableIngressHostname  bool          // enable-ingress-hostname
	IngressHostnameSuffix  string        // ingress-hostname-suffix (default nip.io)
	DefaultTLSContainerRef string        // default-tls-container-ref
	NodeSelector           string        // node-selector: the default of loadbalancer.openstack.org/node-selector
	FloatingSubnetTags     string        // floating-subnet-tags
	// AdoptUpstream: a Service's load balancer made by the upstream
	// openstack-cloud-controller-manager becomes this cluster's on its first
	// sync (pkg/loadbalancer/adopt.go). Stackward's own key, default true.
	AdoptUpstream bool // adopt-upstream-load-balancers
	// Classes are the [LoadBalancerClass "name"] sections, by name
	// (lbclass.go).
	Classes        map[string]*LBClass
	ContainerStore string // container-store: barbican (default) or external
}

// Route is the [Route] section (Neutron router routes for pod CIDRs).
type Route struct {
	RouterID string // router-id
	// AdoptUpstream: a route the upstream openstack-cloud-controller-manager
	// made for a Node (its pod CIDR via its address) joins this cluster's
	// route ledger (pkg/routes/adoptpolicy.go). Stackward's own key,
	// default true; its own rather than the load balancers' so that either
	// can be refused alone.
	AdoptUpstream bool // adopt-upstream-routes
}

// Defaults returns a Config holding the upstream defaults.
func Defaults() *Config {
	return &Config{
		Metadata: Metadata{
			SearchOrder: []string{MetadataConfigDrive, MetadataMetadataService},
		},
		LoadBalancer: LoadBalancer{
			Enabled:               true,
			MonitorDelay:          5 * time.Second,
			MonitorTimeout:        3 * time.Second,
			MonitorMaxRetries:     1,
			MonitorMaxRetriesDown: 3,
			CascadeDelete:         true,
			AdoptUpstream:         true,
			MaxSharedLB:           2,
			IngressHostnameSuffix: "nip.io",
			ContainerStore:        "barbican",
		},
		Route: Route{AdoptUpstream: true},
	}
}

// Load reads the cloud.conf at path, merges secret files and clouds.yaml,
// and validates the result. On error the Config is nil and the error lists
// every problem found; warnings are returned either way.
func Load(path string) (*Config, []Warning, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read cloud config: %w", err)
	}
	defer f.Close()
	return Read(path, f)
}

// Read is Load for a configuration already open; name is used in messages
// and relative paths inside the file are relative to the working directory,
// as upstream.
func Read(name string, r io.Reader) (*Config, []Warning, error) {
	cfg, warnings, err := Parse(name, r)
	if err != nil {
		return nil, warnings, err
	}
	more, err := cfg.resolve()
	warnings = append(warnings, more...)
	if err != nil {
		return nil, warnings, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, warnings, err
	}
	return cfg, warnings, nil
}
