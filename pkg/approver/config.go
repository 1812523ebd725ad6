package approver

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Config is everything stackward-approver needs to run as a process: the
// decision Options plus where the apiserver and the cloud are, leader
// election and the health/metrics endpoint.
type Config struct {
	Options

	// RESTConfig reaches the apiserver; when nil, Kubeconfig is loaded
	// (empty Kubeconfig: in-cluster).
	RESTConfig *rest.Config
	Kubeconfig string

	// Cloud answers the instance lookups. When nil, it is built from the
	// cloud.conf at CloudConfig. When CloudConfig is set, its [Networking]
	// section also shapes the addresses (Policy.Addresses), as in the CCM.
	Cloud       Cloud
	CloudConfig string

	LeaderElection LeaderElection

	// KubeAPIQPS and KubeAPIBurst limit the apiserver client (0: the
	// defaults above; they replace those of a given RESTConfig).
	KubeAPIQPS   float32
	KubeAPIBurst int

	// Serving serves /healthz, /readyz and /metrics over HTTPS with
	// delegated authentication and authorization (NewServing); nil serves
	// nothing.
	Serving *Serving
	// MetricsBindAddress is the deprecated --metrics-bind-address: a
	// host:port that replaces Serving's address and port (a nil Serving
	// then takes NewServing's other defaults), "0" serves nothing, empty
	// leaves Serving alone.
	MetricsBindAddress string

	// SignWithCADir, when set, makes the approver the kubelet-serving
	// signer with the CA in that directory (kubelet-serving-ca.{crt,key}),
	// issuing certificates valid for ServingCertLifetime.
	SignWithCADir       string
	ServingCertLifetime time.Duration

	// CABundle publishes the kubelet-serving CA bundle (a ConfigMap, and a
	// ClusterTrustBundle where served) while this replica leads. Its Dir
	// defaults to SignWithCADir.
	CABundle CABundle
	// Dynamic writes the ClusterTrustBundle (its version is discovered);
	// when nil, Run builds it like the typed client.
	Dynamic dynamic.Interface
}

// LeaderElection configures the Lease that makes one replica decide.
type LeaderElection struct {
	Enabled   bool
	Namespace string
	LeaseName string
	// Identity names this replica in the Lease; default hostname_random.
	Identity      string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// Defaults for the flags and for zero fields.
const (
	DefaultLeaseName         = "stackward-approver"
	DefaultLeaseNamespace    = "kube-system"
	DefaultMaxPendingPerNode = 3
	DefaultCloudQPS          = 20
	DefaultCloudBurst        = 40
	// DefaultServiceCIDR is kubeadm's default (and bootstrap/'s).
	DefaultServiceCIDR = "10.96.0.0/12"
	// A 1,000-node join burst is 1,000 approvals (one write each) plus a
	// few Events: at 200 writes/s after a burst of 400 it is recorded in
	// about 3 s, and the apiserver is not swamped by one client. (A burst
	// of 1,000 measured slower on 2 cores: every write at once only queues
	// at the apiserver, behind the nodes' own requests.)
	DefaultKubeAPIQPS   = 200
	DefaultKubeAPIBurst = 400
	// Requests waiting for the cloud together share one listing; with a
	// 250 ms window a burst costs at most four listings per second (each
	// one page per 1,000 servers), however many requests it brings, for at
	// most 250 ms more latency.
	DefaultCoalesceWindow = 250 * time.Millisecond
	// When a listing takes longer than the window (a slow cloud, many
	// pages), the next one starts anyway, up to this many at once: a
	// request then waits about one window for its listing to start, not
	// for the previous one to end.
	DefaultCoalesceOverlap = 3
	// Workers mostly wait for a shared listing: there are enough that a
	// 1,000-node burst is answered by a few listings rather than by
	// 1,000/workers rounds of them.
	DefaultWorkers     = 1024
	DefaultEventWindow = 10 * time.Second
)

func (le *LeaderElection) withDefaults() {
	if le.LeaseName == "" {
		le.LeaseName = DefaultLeaseName
	}
	if le.Namespace == "" {
		le.Namespace = DefaultLeaseNamespace
	}
	if le.LeaseDuration <= 0 {
		le.LeaseDuration = 15 * time.Second
	}
	if le.RenewDeadline <= 0 {
		le.RenewDeadline = 10 * time.Second
	}
	if le.RetryPeriod <= 0 {
		le.RetryPeriod = 2 * time.Second
	}
}

// Validate reports every problem of the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Cloud == nil && c.CloudConfig == "" {
		errs = append(errs, errors.New("--cloud-config: required (the approver verifies every request against the cloud)"))
	}
	if c.MaxExpiration < 0 {
		errs = append(errs, fmt.Errorf("--max-expiration: %s is negative", c.MaxExpiration))
	}
	if c.MaxExpiration > 0 && c.MaxExpiration < 10*time.Minute {
		errs = append(errs, fmt.Errorf("--max-expiration: %s is below the 10m minimum the apiserver allows for spec.expirationSeconds", c.MaxExpiration))
	}
	if c.MaxPendingPerNode < 0 {
		errs = append(errs, fmt.Errorf("--max-pending-per-node: %d is negative", c.MaxPendingPerNode))
	}
	if c.CloudQPS < 0 {
		errs = append(errs, fmt.Errorf("--cloud-qps: %v is negative", c.CloudQPS))
	}
	if c.CloudQPS > 0 && c.CloudBurst < 1 {
		errs = append(errs, fmt.Errorf("--cloud-burst: %d must be at least 1 when --cloud-qps is set", c.CloudBurst))
	}
	if c.SignWithCADir != "" && c.ServingCertLifetime != 0 && c.ServingCertLifetime < time.Hour {
		errs = append(errs, fmt.Errorf("--serving-cert-lifetime: %s is shorter than an hour", c.ServingCertLifetime))
	}
	if c.KubeAPIQPS < 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps: %v is negative", c.KubeAPIQPS))
	}
	if c.KubeAPIBurst < 0 {
		errs = append(errs, fmt.Errorf("--kube-api-burst: %d is negative", c.KubeAPIBurst))
	}
	if c.CoalesceWindow < 0 {
		errs = append(errs, fmt.Errorf("--cloud-coalesce-window: %s is negative", c.CoalesceWindow))
	}
	if c.Workers < 0 {
		errs = append(errs, fmt.Errorf("--workers: %d is negative", c.Workers))
	}
	for _, s := range c.DNSSuffixes {
		if s == "" || s == "." {
			errs = append(errs, fmt.Errorf("--dns-suffix: %q is empty", s))
		}
	}
	if b := c.CABundle; b.Enabled() {
		if b.ConfigMapNamespace == "" {
			errs = append(errs, fmt.Errorf("--ca-bundle-configmap: %q has no namespace (want namespace/name)", b.ConfigMapName))
		}
		if b.Dir == "" && c.SignWithCADir == "" {
			errs = append(errs, errors.New("--ca-bundle-configmap: needs --ca-bundle-dir or --sign-with-ca-dir (where kubelet-serving-ca.crt is)"))
		}
		// The apiserver's rule for a bundle with spec.signerName.
		if n := b.ClusterTrustBundleName; n != "" && (!strings.HasPrefix(n, clusterTrustBundlePrefix) || len(n) == len(clusterTrustBundlePrefix)) {
			errs = append(errs, fmt.Errorf("--ca-bundle-cluster-trust-bundle: %q must be %s<suffix> (a bundle of signer %s is named after it)", n, clusterTrustBundlePrefix, KubeletServingSigner))
		}
	}
	errs = append(errs, c.Serving.Validate()...)
	if _, err := applyMetricsBindAddress(nil, c.MetricsBindAddress); err != nil {
		errs = append(errs, err)
	}
	le := c.LeaderElection
	if le.Enabled {
		le.withDefaults()
		if le.RenewDeadline >= le.LeaseDuration {
			errs = append(errs, fmt.Errorf("leader election: renew deadline %s must be shorter than the lease duration %s", le.RenewDeadline, le.LeaseDuration))
		}
	}
	return errors.Join(errs...)
}
