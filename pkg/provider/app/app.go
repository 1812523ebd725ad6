// Package app turns the openstack provider into the stackward-ccm command:
// k8s.io/cloud-provider's controller manager (flags, secure serving with
// /healthz and /metrics, leader election, the controllers) with the
// provider built explicitly from --cloud-config.
//
// It lives here rather than in main so that the binary and the e2e suite run
// the very same wiring: main calls Run with os.Args, a test calls Run with a
// kubeconfig, a cloud.conf and its own flags, in-process.
package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	cloudprovider "k8s.io/cloud-provider"
	ccmapp "k8s.io/cloud-provider/app"
	ccmconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/configz"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/metrics/legacyregistry"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"

	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/loadbalancer"
	"github.com/stackward/stackward/pkg/openstack"
	"github.com/stackward/stackward/pkg/provider"
	"github.com/stackward/stackward/pkg/version"
)

// DefaultBindAddress is the CCM's --bind-address default.
const DefaultBindAddress = "127.0.0.1"

// Options are what a caller decides beyond the command line.
type Options struct {
	// Registerer receives Stackward's metrics (cloud call durations and
	// errors). Nil means the component-base legacy registry, which is the
	// one the CCM serves on its secure port's /metrics. Running the CCM
	// twice in one process reuses the collectors already registered.
	Registerer prometheus.Registerer
	// NewClients builds the OpenStack clients from the loaded config; nil
	// means openstack.NewClients. Tests may substitute fakes here.
	NewClients func(ctx context.Context, cfg *config.Config, opts openstack.ClientOptions) (*openstack.Clients, error)
}

// Run runs stackward-ccm with args (without the program name) until ctx is
// done or the command fails. It is the whole binary: main calls it with
// os.Args[1:]; an e2e test calls it in-process, for example
//
//	app.Run(ctx, []string{
//		"--kubeconfig=" + kubeconfig,
//		"--cloud-config=" + cloudConf,
//		"--leader-elect=false", // in-process: see below
//		"--secure-port=0",
//	}, app.Options{Registerer: prometheus.NewRegistry()})
//
// In-process callers should disable leader election: k8s.io/cloud-provider
// runs it on a context it never cancels and exits the process when the
// lease is lost, so with it on, cancelling ctx does not stop the CCM.
func Run(ctx context.Context, args []string, opts Options) error {
	cmd, err := NewCommand(ctx, opts)
	if err != nil {
		return err
	}
	cmd.SetArgs(args)
	return cmd.ExecuteContext(ctx)
}

// allowReapplyingLogging lets the logging configuration be applied again
// unchanged, which happens when one process runs the CCM twice (tests).
var allowReapplyingLogging sync.Once

// NewCommand returns the stackward-ccm command. It stops when ctx is done.
func NewCommand(ctx context.Context, opts Options) (*cobra.Command, error) {
	allowReapplyingLogging.Do(func() {
		logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	})

	s, err := newControllerManagerOptions()
	if err != nil {
		return nil, err
	}

	flags := cliflag.NamedFlagSets{}
	popts := provider.Options{}
	addProviderFlags(flags.FlagSet("stackward"), &popts)

	// The cloud is built in RunE, where an error can be returned, and handed
	// to the app through this initializer, which cannot return one.
	var cloud cloudprovider.Interface
	initCloud := func(c *ccmconfig.CompletedConfig) cloudprovider.Interface {
		// No controller reads managedFields, and at 5,000 Nodes they are a
		// large share of the informer caches: drop them as objects arrive.
		// Nothing has used the factory yet (controllers start after this).
		c.SharedInformers = informers.NewSharedInformerFactoryWithOptions(c.VersionedClient, ccmapp.ResyncPeriod(c)(),
			informers.WithTransform(stripManagedFields))
		return cloud
	}

	constructors := controllerInitializers()
	cmd := ccmapp.NewCloudControllerManagerCommand(s, initCloud, constructors, controllerAliases(constructors), flags, ctx.Done())
	cmd.Use = "stackward-ccm"
	cmd.Short = "OpenStack cloud-controller-manager for Kubernetes"
	cmd.Long = longHelp
	cmd.SilenceUsage = true

	appRunE := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if f := cmd.Flags().Lookup("version"); f != nil && f.Value.String() != "false" {
			fmt.Fprintf(cmd.OutOrStdout(), "stackward-ccm %s (k8s.io/cloud-provider %s)\n", version.Version, moduleVersion("k8s.io/cloud-provider"))
			return nil
		}
		regional := chooseRegionalProviderIDs(cmd.Flags().Changed(regionFlag), popts.RegionInProviderID, os.Getenv(RegionalProviderIDEnv))
		popts.RegionInProviderID = regional.on
		c, err := newCloud(ctx, s.KubeCloudShared.CloudProvider.Name, s.KubeCloudShared.CloudProvider.CloudConfigFile, popts, opts, regional)
		if err != nil {
			return err
		}
		cloud = c
		// The app registers /configz globally and never removes it; remove
		// it so the CCM can run again in the same process.
		defer configz.Delete(ccmapp.ConfigzName)
		return appRunE(cmd, args)
	}
	return cmd, nil
}

// newControllerManagerOptions are k8s.io/cloud-provider's options with
// Stackward's defaults.
func newControllerManagerOptions() (*options.CloudControllerManagerOptions, error) {
	s, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		return nil, fmt.Errorf("default controller manager options: %w", err)
	}
	// The only provider this binary has; the flag stays for compatibility
	// with manifests written for other CCMs.
	s.KubeCloudShared.CloudProvider.Name = provider.ProviderName
	// Loopback rather than k8s.io/cloud-provider's 0.0.0.0: the CCM runs
	// with hostNetwork, where every interface is the control-plane host's.
	// The chart passes the pod's IP (--bind-address=$(POD_IP)) so that
	// Prometheus can scrape it, behind delegated authorization.
	s.SecureServing.BindAddress = netutils.ParseIPSloppy(DefaultBindAddress)
	// Stackward has no webhooks, so the webhook server never listens; but
	// with its port set, k8s.io/cloud-provider still generates a
	// self-signed CA and certificate for it at every start (two RSA keys:
	// from 0.1 s to over 1 s of CPU before any controller starts, on the
	// path of every node waiting to be initialized). Port 0 skips that.
	s.WebhookServing.BindPort = 0
	// k8s.io/cloud-provider's one service worker suits a CCM whose sync
	// waits for the cloud to finish. Stackward's syncs never wait on
	// Octavia (they come back when it has settled, pkg/loadbalancer's busy
	// watch), so a worker is held only for the calls themselves, about a
	// second each on a real cloud: with one, Services created together
	// queue behind each other's calls. More workers send the calls of
	// different Services side by side; a Service is never synced twice at
	// once, and the calls per Service do not change.
	s.ServiceController.ConcurrentServiceSyncs = DefaultConcurrentServiceSyncs
	return s, nil
}

// moduleVersion is the version of a module linked into this binary, as Go
// recorded it ("unknown" in a test binary): component-base's version is not
// stamped in Stackward builds.
func moduleVersion(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	return "unknown"
}

// DefaultConcurrentServiceSyncs is stackward-ccm's default for
// --concurrent-service-syncs (k8s.io/cloud-provider's is 1).
const DefaultConcurrentServiceSyncs = 4

// RegionalProviderIDEnv is the upstream CCM's switch for providerIDs with
// the region, openstack://<region>/<server uuid>: on when exactly "true"
// (upstream pkg/openstack/instances.go reads it so).
const RegionalProviderIDEnv = "OS_CCM_REGIONAL"

const regionFlag = "provider-id-with-region"

// regionalChoice is the providerID form decided from --provider-id-with-region
// and OS_CCM_REGIONAL.
type regionalChoice struct {
	on bool
	// fromEnv: OS_CCM_REGIONAL decided (the flag was not given). Then, as
	// upstream, no region in [Global] makes openstack:///<uuid> rather
	// than an error.
	fromEnv bool
	// ignored is an OS_CCM_REGIONAL value that is not upstream's "true",
	// or that the flag overrode, to be logged.
	ignored string
}

// chooseRegionalProviderIDs: the flag, when given either way, wins (a
// command line is more specific than an environment shared by a chart's
// containers); else OS_CCM_REGIONAL as upstream reads it.
func chooseRegionalProviderIDs(flagGiven, flag bool, env string) regionalChoice {
	switch {
	case flagGiven:
		c := regionalChoice{on: flag}
		if env != "" {
			c.ignored = fmt.Sprintf("%s=%q is overridden by --%s=%t", RegionalProviderIDEnv, env, regionFlag, flag)
		}
		return c
	case env == "true":
		return regionalChoice{on: true, fromEnv: true}
	case env != "":
		return regionalChoice{ignored: fmt.Sprintf("%s=%q is not \"true\", so (as upstream) providerIDs have no region", RegionalProviderIDEnv, env)}
	}
	return regionalChoice{}
}

// newCloud reads the cloud config and builds the provider and its clients.
func newCloud(ctx context.Context, name, path string, popts provider.Options, opts Options, regional regionalChoice) (*provider.WithServices, error) {
	logger := klog.FromContext(ctx)
	if regional.ignored != "" {
		logger.Info("Environment variable ignored", "variable", RegionalProviderIDEnv, "why", regional.ignored)
	}
	if name != provider.ProviderName {
		return nil, fmt.Errorf("--cloud-provider=%q: stackward-ccm only provides %q", name, provider.ProviderName)
	}
	if path == "" {
		return nil, errors.New("--cloud-config is required: the cloud.conf with the OpenStack credentials")
	}
	cfg, warnings, err := config.Load(path)
	for _, w := range warnings {
		logger.Info("Cloud config warning", "file", w.File, "line", w.Line, "section", w.Section, "key", w.Key, "warning", w.Msg)
	}
	if err != nil {
		return nil, fmt.Errorf("--cloud-config: %w", err)
	}
	if regional.fromEnv && cfg.Global.Region == "" {
		logger.Info("OS_CCM_REGIONAL=true but [Global] has no region: providerIDs are openstack:///<server uuid>, as upstream's are then")
		popts.RegionInProviderID = false
	}
	newClients := opts.NewClients
	if newClients == nil {
		newClients = openstack.NewClients
	}
	reg := opts.Registerer
	if reg == nil {
		reg = legacyregistry.Registerer()
	}
	clients, err := openstack.WaitForClients(ctx, "stackward-ccm", func(ctx context.Context) (*openstack.Clients, error) {
		return newClients(ctx, cfg, openstack.ClientOptions{Registerer: reg, UserAgent: "stackward-ccm/" + version.Version})
	})
	if err != nil {
		return nil, fmt.Errorf("openstack clients: %w", err)
	}
	go openstack.NewCredentialWatch(path, clients, cfg.Global).Run(ctx, openstack.CredentialsPollPeriod)
	if err := reg.Register(version.BuildInfo("stackward-ccm")); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		return nil, fmt.Errorf("register stackward_build_info: %w", err)
	}
	cloud, err := provider.NewWithServices(ctx, cfg, clients, popts, provider.ServiceOptions{Registerer: reg})
	if err != nil {
		return nil, fmt.Errorf("openstack provider: %w", err)
	}
	logger.Info("Stackward cloud provider ready", "version", version.Version, "region", cfg.Global.Region, "cloudConfig", path)
	return cloud, nil
}

// addProviderFlags adds the provider's own flags; the rest are the app's.
func addProviderFlags(fs *pflag.FlagSet, o *provider.Options) {
	fs.BoolVar(&o.RegionInProviderID, regionFlag, false,
		"Write providerIDs as openstack://<region>/<server uuid> instead of openstack:///<server uuid> (stackward-node: --region). Lookups accept both,\n"+
			"and refuse another region's. Requires region in [Global]. Not given: the upstream CCM's environment variable "+RegionalProviderIDEnv+"=true turns it on.")
	fs.StringSliceVar(&o.DNSSuffixes, "dns-suffix", nil,
		"A DNS suffix with which a node named <server name>.<suffix> is that server's (repeatable). A Node whose providerID names a server\n"+
			"of another name is not initialized (Event InstanceNameMismatch). Give the approver the same --dns-suffix values.")
	fs.IntVar(&o.NodeCIDRMasks.Any, "node-cidr-mask-size", 0,
		"kube-controller-manager's --node-cidr-mask-size (give the same value): the prefix length of each node's pod CIDR in a single-stack cluster.\n"+
			"A pod CIDR wider than it is never routed (Event PodCIDRRefused). 0: 24 for IPv4, 64 for IPv6, kube-controller-manager's defaults.")
	fs.IntVar(&o.NodeCIDRMasks.IPv4, "node-cidr-mask-size-ipv4", 0,
		"kube-controller-manager's --node-cidr-mask-size-ipv4 (give the same value): the IPv4 node pod CIDR prefix length, single- or dual-stack. 0: 24.")
	fs.IntVar(&o.NodeCIDRMasks.IPv6, "node-cidr-mask-size-ipv6", 0,
		"kube-controller-manager's --node-cidr-mask-size-ipv6 (give the same value): the IPv6 node pod CIDR prefix length, single- or dual-stack. 0: 64.")
	fs.DurationVar(&o.LBStuckAfter, "lb-stuck-after", loadbalancer.DefaultStuckAfter,
		"How long a Service's load balancer may stay PENDING_* before it is reported stuck: a Warning Event LoadBalancerStuck on the Service\n"+
			"naming it and what unblocks it, the stackward_loadbalancers_stuck metric, and stackward doctor. Nothing is created beside a stuck one.")
	fs.DurationVar(&o.ServerCacheTTL, "server-cache-ttl", provider.DefaultServerCacheTTL,
		"How long one servers/detail listing answers node lookups (initialization, address sync, lifecycle checks) for every node. A server missing from the listing is always asked of Nova directly.")
}

const longHelp = `stackward-ccm is the OpenStack cloud-controller-manager of Stackward.

It runs k8s.io/cloud-provider's controllers against Nova:
  cloud-node            initializes Nodes registered with --cloud-provider=external:
                        providerID (openstack:///<server uuid>, or openstack://<region>/
                        <server uuid> with --provider-id-with-region or OS_CCM_REGIONAL=true),
                        InternalIP/ExternalIP/
                        Hostname addresses, node.kubernetes.io/instance-type (the flavor),
                        topology.kubernetes.io/zone (the availability zone) and region,
                        then removes the node.cloudprovider.kubernetes.io/uninitialized
                        taint; afterwards it keeps the addresses in sync.
  cloud-node-lifecycle  deletes a NotReady Node whose server Nova says is gone and taints
                        one whose server is SHUTOFF. A cloud error is never taken as
                        "gone": nothing is deleted on uncertainty.
  service               one Octavia load balancer per Service of type LoadBalancer
                        ([LoadBalancer] in cloud.conf, loadbalancer.openstack.org/*
                        annotations), with a floating IP unless internal.
  route                 a Neutron router route per node pod CIDR ([Route] router-id),
                        only with --allocate-node-cidrs, --configure-cloud-routes and
                        --cluster-cidr, as in kube-controller-manager.

A Node without a providerID is matched to the server with exactly its name; several
servers with that name is an error, never a guess.

Required: --cloud-config=<cloud.conf> (upstream OpenStack CCM format: [Global] auth and
region, [Networking], [Metadata], [LoadBalancer], [Route]) and --kubeconfig (or in-cluster
credentials). --cloud-provider defaults to openstack.

Leader election is on by default (Lease "cloud-controller-manager" in kube-system).
Metrics, Stackward's (stackward_cloud_*, stackward_service_lb_*, stackward_build_info) and
the controllers' (workqueue_*), are served on the secure port's /metrics (default
127.0.0.1:10258: loopback, as the pod runs with hostNetwork; the chart passes the pod's IP),
behind delegated authentication and authorization. --logging-format=json logs JSON.`

// controllerInitializers names the controllers this CCM runs, under the
// names --controllers uses.
func controllerInitializers() map[string]ccmapp.ControllerInitFuncConstructor {
	enabled := []string{
		names.CloudNodeController,
		names.CloudNodeLifecycleController,
		names.ServiceLBController,
		names.NodeRouteController,
	}
	out := make(map[string]ccmapp.ControllerInitFuncConstructor, len(enabled))
	for _, name := range enabled {
		out[name] = ccmapp.DefaultInitFuncConstructors[name]
	}
	out[names.NodeRouteController] = routeOnlyWithAllocatedCIDRs(out[names.NodeRouteController])
	out[names.ServiceLBController] = serviceControllerWithProgressEvents(out[names.ServiceLBController])
	return out
}

// routeOnlyWithAllocatedCIDRs gives the route controller
// kube-controller-manager's condition: routes are configured only when pod
// CIDRs are allocated (--allocate-node-cidrs) and routes are wanted
// (--configure-cloud-routes, on by default). k8s.io/cloud-provider checks
// the second only, and then fails the whole CCM without a --cluster-cidr.
func routeOnlyWithAllocatedCIDRs(c ccmapp.ControllerInitFuncConstructor) ccmapp.ControllerInitFuncConstructor {
	inner := c.Constructor
	c.Constructor = func(initContext ccmapp.ControllerInitContext, completed *ccmconfig.CompletedConfig, cloud cloudprovider.Interface) ccmapp.InitFunc {
		shared := completed.ComponentConfig.KubeCloudShared
		if !shared.AllocateNodeCIDRs || !shared.ConfigureCloudRoutes {
			return func(ctx context.Context, _ genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
				klog.FromContext(ctx).Info("Not configuring cloud routes: they need --allocate-node-cidrs and --configure-cloud-routes",
					"allocateNodeCIDRs", shared.AllocateNodeCIDRs, "configureCloudRoutes", shared.ConfigureCloudRoutes)
				return nil, false, nil
			}
		}
		// The routes check every pod CIDR against --cluster-cidr before
		// anything reaches Neutron (a kubelet may register any pod CIDR).
		if r, ok := cloud.(interface{ SetClusterCIDRs(string) error }); ok {
			if err := r.SetClusterCIDRs(shared.ClusterCIDR); err != nil {
				return func(context.Context, genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
					return nil, false, fmt.Errorf("route controller: %w", err)
				}
			}
		}
		return inner(initContext, completed, cloud)
	}
	return c
}

// controllerAliases keeps the short --controllers names (cloud-node,
// cloud-node-lifecycle) of the controllers this CCM runs, so that asking
// for one it does not run is an error rather than silently nothing.
func controllerAliases(constructors map[string]ccmapp.ControllerInitFuncConstructor) map[string]string {
	out := map[string]string{}
	for alias, name := range names.CCMControllerAliases() {
		if _, ok := constructors[name]; ok {
			out[alias] = name
		}
	}
	return out
}

// stripManagedFields drops an object's managedFields before an informer
// caches it; anything else (a tombstone) passes unchanged.
func stripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}
