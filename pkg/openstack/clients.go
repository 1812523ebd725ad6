package openstack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gophers "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stackward/stackward/pkg/config"
)

// ClientOptions are the process-level choices for talking to the cloud.
type ClientOptions struct {
	// Registerer receives the cloud call metrics; nil keeps them private.
	Registerer prometheus.Registerer
	// UserAgent is prepended to gophercloud's, e.g. "stackward-ccm/v1.2.3".
	UserAgent string
	// HTTPTimeout bounds one HTTP request (default 30s).
	HTTPTimeout time.Duration
	// Retry bounds the retries of one call; zero fields take the defaults.
	Retry RetryPolicy
}

// Clients are the authenticated service clients, built once per process.
type Clients struct {
	Compute Compute
	Network Network
	// Ownership answers which ports and floating IPs a server owns.
	Ownership Ownership
	// Neutron is the concrete Neutron adapter behind Network and
	// Ownership, for the routes' and load balancers' narrow interfaces.
	Neutron *Neutron
	// ProjectID is the project the token is scoped to ("" when the scope
	// is not a project, e.g. a domain).
	ProjectID string
	// Region is the configured region ("" when the cloud has one).
	Region string
	// Caller is the instrumented helper every adapter of this package
	// shares (NewOctavia too).
	Caller *Caller
	// Provider is the authenticated gophercloud provider (it re-authenticates
	// by itself), and Endpoint the options to find services in its catalog.
	Provider *gophercloud.ProviderClient
	Endpoint gophercloud.EndpointOpts
}

// ComputeMicroversion is the Nova microversion requested: 2.47 embeds the
// flavor (original_name) in the server, saving a flavor lookup per node.
const ComputeMicroversion = "2.47"

// NewClients authenticates against Keystone and builds the service clients.
// The token is renewed by gophercloud when it expires (AllowReauth), so the
// Clients live as long as the process; with [Global] token it is renewed
// from that token, so only until that one expires (CredentialWatch takes a
// new one from the cloud config).
func NewClients(ctx context.Context, cfg *config.Config, opts ClientOptions) (*Clients, error) {
	caller, err := NewCaller(opts.Registerer, opts.Retry)
	if err != nil {
		return nil, err
	}
	g := cfg.Global
	provider, err := gophers.NewClient(g.AuthURL)
	if err != nil {
		return nil, fmt.Errorf("openstack client for %q: %w", g.AuthURL, err)
	}
	httpClient, err := newHTTPClient(g, opts.HTTPTimeout)
	if err != nil {
		return nil, err
	}
	provider.HTTPClient = *httpClient
	if opts.UserAgent != "" {
		provider.UserAgent.Prepend(opts.UserAgent)
	}
	authOpts := AuthOptions(g)
	err = caller.Do(ctx, ServiceIdentity, "authenticate", func(ctx context.Context) error {
		return gophers.Authenticate(ctx, provider, authOpts)
	})
	if err != nil {
		if g.Token != "" && gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil, fmt.Errorf("authenticate to %s: [Global] token is expired, revoked or unknown: %w", g.AuthURL, err)
		}
		return nil, fmt.Errorf("authenticate to %s: %w", g.AuthURL, err)
	}

	eo := gophercloud.EndpointOpts{Region: g.Region, Availability: availability(g.EndpointType)}
	compute, err := serviceClient(provider, eo, "compute")
	if err != nil {
		return nil, err
	}
	compute.Microversion = ComputeMicroversion
	network, err := neutronClient(provider, eo)
	if err != nil {
		return nil, err
	}
	neutron := &Neutron{client: network, caller: caller}
	return &Clients{
		Compute:   newNova(compute, caller),
		Network:   neutron,
		Ownership: neutron,
		Neutron:   neutron,
		ProjectID: authProject(provider),
		Region:    g.Region,
		Caller:    caller,
		Provider:  provider,
		Endpoint:  eo,
	}, nil
}

// ServiceClient finds a service (e.g. "load-balancer") in the catalog, the
// same way the compute and network clients were found. It is for tests that
// read the cloud's state behind the adapters' back; Stackward's own calls
// use the adapters of this package.
func (c *Clients) ServiceClient(serviceType string) (*gophercloud.ServiceClient, error) {
	return serviceClient(c.Provider, c.Endpoint, serviceType)
}

// NeutronClient is a client for Neutron's v2.0 API, for tests that read the
// cloud's state behind the adapters' back (see ServiceClient).
func (c *Clients) NeutronClient() (*gophercloud.ServiceClient, error) {
	return neutronClient(c.Provider, c.Endpoint)
}

// neutronClient finds Neutron; its catalog URL carries no version, so the
// API's resources live under v2.0/.
func neutronClient(provider *gophercloud.ProviderClient, eo gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error) {
	c, err := serviceClient(provider, eo, "network")
	if err != nil {
		return nil, err
	}
	c.ResourceBase = c.Endpoint + "v2.0/"
	return c, nil
}

// serviceClient finds a service in the token's catalog. Unlike
// gophers.NewComputeV2 and friends it does not ask each endpoint for its
// versions: those requests would bypass the Caller (no metrics, no retry,
// no ctx) and cost a call per service at every start.
func serviceClient(provider *gophercloud.ProviderClient, eo gophercloud.EndpointOpts, serviceType string) (*gophercloud.ServiceClient, error) {
	if provider == nil {
		return nil, fmt.Errorf("find the %s service: %w", serviceType, ErrNoCatalog)
	}
	eo.ApplyDefaults(serviceType)
	eo.Version = 0
	url, err := provider.EndpointLocator(eo)
	if err != nil {
		return nil, fmt.Errorf("find the %s service (region %q, interface %s) in the catalog: %w", serviceType, eo.Region, eo.Availability, err)
	}
	return &gophercloud.ServiceClient{ProviderClient: provider, Endpoint: url, Type: serviceType}, nil
}

func newHTTPClient(g config.Global, timeout time.Duration) (*http.Client, error) {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: g.TLSInsecure} //nolint:gosec // the user asked for it
	if g.CAFile != "" {
		pem, err := os.ReadFile(g.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca-file %s: no PEM certificate in it", g.CAFile)
		}
		tlsConfig.RootCAs = pool
	}
	if g.CertFile != "" || g.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(g.CertFile, g.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load cert-file and key-file: %w", err)
		}
		tlsConfig.Certificates = []tls.Certificate{cert}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	// One CCM talks to a handful of endpoints, often; keep connections.
	transport.MaxIdleConnsPerHost = 32
	return &http.Client{Transport: transport, Timeout: timeout}, nil
}
