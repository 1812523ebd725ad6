package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/openstack"
	"github.com/stackward/stackward/pkg/routes"
)

// ProviderName is the --cloud-provider name, the scheme of providerIDs.
const ProviderName = "openstack"

// DefaultServerCacheTTL bounds how stale the bulk server listing behind
// every node lookup may be. The lifecycle controller asks about NotReady
// nodes every 5 s and the address sync runs every 5 min: one listing per
// 20 s serves both, and node initialization, for any number of nodes, and
// a shutdown or deletion is noticed within 20 s.
const DefaultServerCacheTTL = 20 * time.Second

// Options are the provider's own settings, beyond cloud.conf.
type Options struct {
	// RegionInProviderID writes providerIDs as openstack://<region>/<uuid>
	// rather than openstack:///<uuid>. Both are accepted when parsing.
	RegionInProviderID bool
	// ServerCacheTTL is the lifetime of one servers/detail listing; zero
	// means DefaultServerCacheTTL.
	ServerCacheTTL time.Duration
	// DNSSuffixes let a node named <server name>.<suffix> be that server's,
	// as the approver's --dns-suffix does; give both the same values.
	DNSSuffixes []string
	// NodeCIDRMasks are kube-controller-manager's --node-cidr-mask-size
	// values: a pod CIDR wider than its family's is never routed.
	NodeCIDRMasks routes.NodeCIDRMaskSizes
	// LBStuckAfter is how long a load balancer may stay PENDING_* before
	// it is reported stuck; zero means loadbalancer.DefaultStuckAfter.
	LBStuckAfter time.Duration
}

// Cloud is the openstack cloudprovider.Interface.
type Cloud struct {
	cfg       *config.Config
	instances *instances
}

var _ cloudprovider.Interface = (*Cloud)(nil)

// New builds the provider from a loaded config and built clients (which
// have already authenticated). It makes no cloud call itself: lookups start
// when the controllers ask.
func New(cfg *config.Config, clients *openstack.Clients, opts Options) (*Cloud, error) {
	var errs []error
	if cfg == nil {
		errs = append(errs, errors.New("no cloud config"))
	}
	if clients == nil || clients.Compute == nil {
		errs = append(errs, errors.New("no compute client"))
	}
	if opts.ServerCacheTTL < 0 {
		errs = append(errs, fmt.Errorf("server cache TTL %s is negative", opts.ServerCacheTTL))
	}
	if cfg != nil && opts.RegionInProviderID {
		// A providerID written must be one every component parses back
		// (this lookup, the approver's, stackward-node's).
		if cfg.Global.Region == "" {
			errs = append(errs, errors.New("providerIDs with the region need region in [Global]"))
		} else if region, _, err := openstack.ParseProviderID(openstack.ProviderID(cfg.Global.Region, "0")); err != nil || region != cfg.Global.Region {
			errs = append(errs, fmt.Errorf("[Global] region %q cannot be part of a providerID (it contains '/', '?' or '#')", cfg.Global.Region))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new openstack provider: %w", err)
	}
	ttl := opts.ServerCacheTTL
	if ttl == 0 {
		ttl = DefaultServerCacheTTL
	}
	region := ""
	if opts.RegionInProviderID {
		region = cfg.Global.Region
	}
	var trunks trunkSource
	if clients.Neutron != nil {
		trunks = openstack.NewTrunkCache(clients.Neutron, clients.ProjectID, ttl)
	}
	return &Cloud{
		cfg: cfg,
		instances: &instances{
			trunks:           trunks,
			servers:          openstack.NewServerCache(clients.Compute, ttl),
			region:           cfg.Global.Region,
			providerIDRegion: region,
			project:          projectOf(cfg),
			addresses:        nodeaddress.OptionsFromConfig(cfg.Networking),
			dnsSuffixes:      nodeaddress.NormalizeDNSSuffixes(opts.DNSSuffixes),
		},
	}, nil
}

// projectOf names the project for messages, as the user configured it.
func projectOf(cfg *config.Config) string {
	switch {
	case cfg.Global.TenantName != "":
		return fmt.Sprintf("%q", cfg.Global.TenantName)
	case cfg.Global.TenantID != "":
		return cfg.Global.TenantID
	case cfg.Global.Cloud != "":
		return fmt.Sprintf("of cloud %q", cfg.Global.Cloud)
	default:
		return "of the configured credentials"
	}
}

// Initialize starts what needs the apiserver: an event recorder, so that a
// node the provider cannot match to a server gets an Event saying why (the
// cloud-node controller only logs the error and retries).
func (c *Cloud) Initialize(clientBuilder cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	logger := klog.FromContext(ctx).WithName("openstack")
	client, err := clientBuilder.Client("stackward-openstack-provider")
	if err != nil {
		// Events are a courtesy; the controllers work without them.
		logger.Error(err, "No event recorder: nodes that match no server get no Event")
		cancel()
		return
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	c.instances.setRecorder(broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "stackward-ccm"}))
	go func() {
		<-stop
		broadcaster.Shutdown()
		cancel()
	}()
}

// InstancesV2 is how the node controllers ask about nodes; see instances.go.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c.instances, true }

// Instances (v1) is not implemented: InstancesV2 replaces it and makes one
// cloud call where v1 needs several.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

// Zones is not implemented: InstancesV2's metadata carries zone and region.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

// Clusters is not implemented (no cloud-side cluster objects).
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// ProviderName is "openstack", the scheme of the providerIDs.
func (c *Cloud) ProviderName() string { return ProviderName }

// HasClusterID is true: load balancer names carry the --cluster-name,
// so two clusters in one project cannot take each other's resources.
func (c *Cloud) HasClusterID() bool { return true }
