package app

import (
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	// The JSON log format, as in stackward-ccm: --logging-format=json.
	// Formats must be registered before the logging flags are added.
	_ "k8s.io/component-base/logs/json/register"

	"github.com/stackward/stackward/pkg/approver"
	"github.com/stackward/stackward/pkg/pki"
	"github.com/stackward/stackward/pkg/version"
)

// flags are the approver's command line: its Config, and the logging
// configuration Run applies before approver.Run.
type flags struct {
	fs       *pflag.FlagSet
	cfg      *approver.Config
	logging  *logsapi.LoggingConfiguration
	features featuregate.MutableVersionedFeatureGate
}

// applyLogging validates the logging flags and makes them klog's; nil
// options write to the standard streams.
func (f *flags) applyLogging(opts *logsapi.LoggingOptions) error {
	if err := f.validateLogging(); err != nil {
		return err
	}
	if err := logsapi.ValidateAndApplyWithOptions(f.logging, opts, f.features); err != nil {
		return fmt.Errorf("logging flags (--logging-format, -v, --vmodule, --log-*): %w", err)
	}
	return nil
}

// validateLogging reports what is wrong with the logging flags, if
// anything, without applying them.
func (f *flags) validateLogging() error {
	if errs := logsapi.Validate(f.logging, f.features, nil); len(errs) != 0 {
		return fmt.Errorf("logging flags (--logging-format, -v, --vmodule, --log-*): %w", errs.ToAggregate())
	}
	return nil
}

func newFlags() *flags {
	cfg := &approver.Config{}
	cfg.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix(approver.DefaultServiceCIDR)}
	fs := pflag.NewFlagSet("stackward-approver", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "",
		"Path to a kubeconfig. Empty: the in-cluster service account (the normal case in the CCM pod).")
	fs.StringVar(&cfg.CloudConfig, "cloud-config", "",
		"Path to a cloud.conf in the CCM's format (required). Its credentials are used to look instances up (they may be a\n"+
			"read-only credential of the approver's own), and its [Networking] section decides which addresses a node has,\n"+
			"exactly as the CCM publishes them: keep that section the same as the CCM's.")
	fs.StringSliceVar(&cfg.DNSSuffixes, "dns-suffix", nil,
		"A DNS suffix whose <node name>.<suffix> and <server name>.<suffix> are allowed as DNS SANs (repeatable or\n"+
			"comma-separated, as for stackward-ccm). Without it only the bare node name, server name and Hostname addresses\n"+
			"are allowed. Also lets a node whose name is <server name>.<suffix> vouch for that server.")
	fs.DurationVar(&cfg.MaxExpiration, "max-expiration", 0,
		"Deny requests whose spec.expirationSeconds asks for longer than this, naming it. 0: the default, 48h (the built-in\n"+
			"signer's lifetime). Kubelets do not set spec.expirationSeconds: with kube-controller-manager signing, its\n"+
			"--cluster-signing-duration decides their lifetime.")
	fs.BoolVar(&cfg.LeavePendingOnDeny, "leave-pending-on-deny", false,
		"Dry run for denials: record what would be denied (Event on the CSR, log, metric) but leave the request pending,\n"+
			"so a person can decide. Approvals still happen.")
	fs.BoolVar(&cfg.SubjectAccessReview, "subject-access-review", false,
		"Also require that the requesting node may create certificatesigningrequests/selfnodeserver (checked with a\n"+
			"SubjectAccessReview). For clusters that grant serving certificates to some nodes only.")
	fs.IntVar(&cfg.MaxPendingPerNode, "max-pending-per-node", approver.DefaultMaxPendingPerNode,
		"At most this many pending requests of one node are considered at a time, oldest first; the others stay pending\n"+
			"until those are decided. Bounds the cloud calls a misbehaving kubelet can cause. 0: no cap.")
	fs.Float64Var(&cfg.CloudQPS, "cloud-qps", approver.DefaultCloudQPS,
		"Maximum cloud calls per second. A lone request costs a targeted lookup (its server, then its ports and their\n"+
			"floating IPs); requests waiting together share bulk requests sized by the batch, not the project (Nova servers by\n"+
			"name, the Neutron ports of those servers, the floating IPs on them when asked for). Every call counts once and\n"+
			"waits its turn. 0: unlimited.")
	fs.IntVar(&cfg.CloudBurst, "cloud-burst", approver.DefaultCloudBurst, "Burst allowed above --cloud-qps.")
	fs.BoolVar(&cfg.AllowAccessIPs, "allow-access-ips", false,
		"Also certify a server's accessIPv4/accessIPv6. Off by default: any member of the project can set them to any\n"+
			"address (PUT /servers/{id}), so they prove nothing. The CCM publishes them either way.")
	fs.StringSliceVar(&cfg.NetworkIDs, "trusted-network-id", nil,
		"Only fixed IPs of ports on these Neutron networks are certified (repeatable or comma-separated). Without it, ports\n"+
			"on the CCM's internal/public network names, on networks the cluster's project owns or an administrator shared.")
	fs.Var(&netipList[netip.Prefix]{list: &cfg.ServiceCIDRs, parse: netip.ParsePrefix, kind: "a CIDR"}, "service-cidr",
		"The cluster's Service CIDR(s) (repeatable or comma-separated): never certified, whatever the cloud reports\n"+
			"(the kubernetes Service IP is the apiserver for every pod). Default "+approver.DefaultServiceCIDR+", kubeadm's and bootstrap/'s.")
	fs.Var(&netipList[netip.Addr]{list: &cfg.ControlPlaneEndpoints, parse: netip.ParseAddr, kind: "an IP address"}, "control-plane-endpoint",
		"Control-plane addresses that no node owns (a VIP or load balancer in front of the apiservers; repeatable or\n"+
			"comma-separated): certified for no node. Do not list a control-plane host's own address (its apiserver's\n"+
			"advertise address is its kubelet's node IP): a node's own cloud-verified address is approved for that node\n"+
			"even when listed, and the listing is reported once (Event and log naming the node and the address).")
	fs.DurationVar(&cfg.CoalesceWindow, "cloud-coalesce-window", approver.DefaultCoalesceWindow,
		"Least time between the starts of two cloud lookups; requests arriving meanwhile wait and share the next one, which\n"+
			"always starts after they arrived (a decision never rests on cloud data read before its request).")
	fs.IntVar(&cfg.Workers, "workers", approver.DefaultWorkers,
		"Requests decided in parallel; also the most requests one cloud lookup batch can answer at once.")
	fs.Float32Var(&cfg.KubeAPIQPS, "kube-api-qps", approver.DefaultKubeAPIQPS,
		"Apiserver requests per second of the approver's client. Each approval or denial is one write.")
	fs.IntVar(&cfg.KubeAPIBurst, "kube-api-burst", approver.DefaultKubeAPIBurst, "Burst allowed above --kube-api-qps.")
	fs.BoolVar(&cfg.LeaderElection.Enabled, "leader-elect", true,
		"Decide only while holding a Lease, so that one of several replicas acts. Disable only with a single replica.")
	fs.StringVar(&cfg.LeaderElection.Namespace, "leader-elect-resource-namespace", approver.DefaultLeaseNamespace,
		"Namespace of the leader election Lease.")
	fs.StringVar(&cfg.LeaderElection.LeaseName, "leader-elect-resource-name", approver.DefaultLeaseName,
		"Name of the leader election Lease (must differ from the CCM's).")
	fs.DurationVar(&cfg.LeaderElection.LeaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"How long a standby waits after the leader's last renewal before taking the Lease over.")
	fs.DurationVar(&cfg.LeaderElection.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"How long the leader keeps trying to renew before it stops deciding (and exits); shorter than the lease duration.")
	fs.DurationVar(&cfg.LeaderElection.RetryPeriod, "leader-elect-retry-period", 2*time.Second,
		"How often the Lease is tried and renewed.")
	fs.StringVar(&cfg.SignWithCADir, "sign-with-ca-dir", "",
		"Be the kubernetes.io/kubelet-serving signer: sign every approved request with the CA in this directory\n"+
			"(kubelet-serving-ca.crt and .key, from stackward pki init) and write status.certificate. Configure\n"+
			"kube-controller-manager without --cluster-signing-kubelet-serving-* files then. Empty: KCM signs.")
	fs.DurationVar(&cfg.ServingCertLifetime, "serving-cert-lifetime", pki.DefaultServingCertLifetime,
		"Lifetime of the certificates --sign-with-ca-dir issues (spec.expirationSeconds may shorten it). Short, so a\n"+
			"leaked key of a reused IP dies soon; the kubelet rotates at 70-90 % of it.")
	fs.StringVar(&cfg.CABundle.Dir, "ca-bundle-dir", "",
		"Directory with kubelet-serving-ca.crt and, during a rotation, kubelet-serving-ca-bundle.crt (certificates only,\n"+
			"the key is not read). Default: --sign-with-ca-dir.")
	fs.Var(&namespacedName{ns: &cfg.CABundle.ConfigMapNamespace, name: &cfg.CABundle.ConfigMapName}, "ca-bundle-configmap",
		"namespace/name of a ConfigMap (key ca.crt) to publish the kubelet-serving CA bundle in, for metrics-server\n"+
			"(--kubelet-certificate-authority) and Prometheus (ca_file); kept equal to the files while leading. Empty: publish nothing.")
	fs.StringVar(&cfg.CABundle.ClusterTrustBundleName, "ca-bundle-cluster-trust-bundle", approver.CABundleClusterTrustBundle,
		"Also publish the bundle as this ClusterTrustBundle (signer "+approver.KubeletServingSigner+") when the apiserver\n"+
			"serves certificates.k8s.io/v1 or v1beta1 clustertrustbundles (checked at every publication). Empty: ConfigMap only.")
	cfg.Serving = approver.NewServing()
	cfg.Serving.AddFlags(fs)
	fs.StringVar(&cfg.MetricsBindAddress, "metrics-bind-address", "",
		"Deprecated: use --bind-address and --secure-port. A host:port that replaces them; \"0\" serves nothing. The\n"+
			"endpoint is HTTPS with delegated authentication and authorization either way.")
	_ = fs.MarkDeprecated("metrics-bind-address", "use --bind-address and --secure-port (the endpoint is HTTPS now)")

	// Per-node budgets and the Event limit (hardening, issue 24).
	fs.IntVar(&cfg.MaxIssuedPerNode, "max-certificates-per-node", approver.DefaultMaxIssuedPerNode,
		"Approvals per node within --node-budget-window; a kubelet needs one certificate at a time (plus rotations and\n"+
			"address changes). Beyond it a request stays pending with an Event until the window has room. Negative: no cap.")
	fs.IntVar(&cfg.MaxDenialsPerNode, "max-denials-per-node", approver.DefaultMaxDenialsPerNode,
		"Denials written per node within --node-budget-window. Beyond it a node's bad requests stay pending without a\n"+
			"write or an Event, so one node's flood does not spend the apiserver budget approvals need. Negative: no cap.")
	fs.DurationVar(&cfg.NodeBudgetWindow, "node-budget-window", approver.DefaultNodeBudgetWindow,
		"The sliding window of --max-certificates-per-node and --max-denials-per-node.")
	fs.Float64Var(&cfg.EventQPS, "event-qps", approver.DefaultEventQPS,
		"New Events written per second (burst 4x), apart from the decisions' writes; beyond it they are dropped and\n"+
			"counted (stackward_approver_events_dropped_total). Negative: no limit.")

	f := &flags{fs: fs, cfg: cfg, logging: logsapi.NewLoggingConfiguration()}
	// Logging as in stackward-ccm (component-base): --logging-format
	// (text, json), -v, --vmodule and the format options, with a feature
	// gate of this process only (the JSON format is behind a Beta gate,
	// on by default).
	fg := featuregate.NewFeatureGate()
	if err := logsapi.AddFeatureGates(fg); err != nil {
		panic(fmt.Sprintf("logging feature gates: %v", err)) // a programming error: the gate is new
	}
	f.features = fg
	logsapi.AddFlags(f.logging, fs)
	fg.AddFlag(fs)
	fs.Usage = func() { usage(fs.Output(), fs) }
	return f
}

func usage(out io.Writer, fs *pflag.FlagSet) {
	fmt.Fprintf(out, `stackward-approver %s: approves kubelet serving certificate requests (signer kubernetes.io/kubelet-serving)
only after checking every requested IP and DNS name against what the cloud reports for the requesting node's instance.

Other signers' requests are never touched. A request the cloud proves wrong is denied with a reason naming the
offending value; when the cloud or the apiserver cannot answer, the request stays pending and is retried.

Usage:
  stackward-approver [flags]                  run (normally as a sidecar of stackward-ccm)
  stackward-approver explain [flags] <csr>    show, check by check, what would be decided for one CSR; changes nothing

Flags:
`, version.Version)
	fmt.Fprint(out, fs.FlagUsagesWrapped(0))
}
