package doctor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/openstack"
	"github.com/stackward/stackward/pkg/version"
)

// Output formats.
const (
	OutputText = "text"
	OutputJSON = "json"
)

// Config is what `stackward doctor` is told on its command line.
type Config struct {
	// Kubeconfig is the cluster; empty uses $KUBECONFIG, ~/.kube/config or
	// the in-cluster configuration, as kubectl does.
	Kubeconfig string
	// Context selects a kubeconfig context; empty is the current one.
	Context string
	// CloudConfig is a cloud.conf; empty asks no cloud.
	CloudConfig string
	Output      string
	Timeout     time.Duration
	Out         io.Writer
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
	// ServingCAFile is the kubelet-serving CA certificate to check;
	// ServingCAFileSet says the user named it (then a missing file is a
	// finding, not a host without one).
	ServingCAFile    string
	ServingCAFileSet bool
	// CAExpiryWarning: a CA expiring within it is a finding.
	CAExpiryWarning time.Duration
	// StuckAfter: a load balancer PENDING_* for this long is a finding;
	// zero means DefaultStuckAfter.
	StuckAfter time.Duration
}

// Validate reports every problem at once, each naming its flag.
func (c *Config) Validate() error {
	var errs []error
	if c.Output != OutputText && c.Output != OutputJSON {
		errs = append(errs, fmt.Errorf("-o: %q is neither %s nor %s", c.Output, OutputText, OutputJSON))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout: %s is not positive", c.Timeout))
	}
	if c.CAExpiryWarning < 0 {
		errs = append(errs, fmt.Errorf("--ca-expiry-warning: %s is negative", c.CAExpiryWarning))
	}
	if c.Out == nil {
		errs = append(errs, errors.New("no output writer"))
	}
	return errors.Join(errs...)
}

// Run diagnoses the cluster, writes the report and returns it.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = cfg.Kubeconfig
	restConfig, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cfg.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	restConfig.UserAgent = "stackward-doctor/" + version.Version
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	cloud, cloudErr := buildCloud(ctx, cfg.CloudConfig)
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	r, err := DiagnoseCluster(ctx, client, cloud, now())
	if err != nil {
		return nil, err
	}
	if cloud != nil && cloud.LoadBalancers != nil {
		r.StuckLoadBalancers, err = clusterStuckLoadBalancers(ctx, client, cloud.LoadBalancers, now(), cmp.Or(cfg.StuckAfter, DefaultStuckAfter))
		if err != nil {
			r.LoadBalancerError = err.Error()
		}
	}
	r.CAExpiryWarning = cfg.CAExpiryWarning.String()
	r.ServingCA = servingCAStatus(ctx, client, cfg.ServingCAFile, cfg.ServingCAFileSet, cfg.CAExpiryWarning, now())
	if cloudErr != nil {
		r.Cloud = "not asked: " + cfg.CloudConfig + " could not be used"
		r.CloudError = cloudErr.Error()
	} else if cfg.CloudConfig != "" {
		r.Cloud = strings.Replace(r.Cloud, "asked", "asked per "+cfg.CloudConfig, 1)
	}
	if cfg.Output == OutputJSON {
		enc := json.NewEncoder(cfg.Out)
		enc.SetIndent("", "  ")
		return r, enc.Encode(r)
	}
	return r, WriteText(cfg.Out, r)
}

// DiagnoseCluster reads the Nodes and CSRs through client and diagnoses them.
func DiagnoseCluster(ctx context.Context, client kubernetes.Interface, cloud *Cloud, now time.Time) (*Report, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	csrs, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list certificate signing requests: %w", err)
	}
	return Diagnose(ctx, Inputs{Nodes: nodes.Items, CSRs: csrs.Items, Cloud: cloud, Now: now}), nil
}

// buildCloud loads the cloud.conf and authenticates, as the CCM and the
// approver do, so the addresses follow the same [Networking] rules.
func buildCloud(ctx context.Context, path string) (*Cloud, error) {
	if path == "" {
		return nil, nil
	}
	cc, _, err := config.Load(path)
	if err != nil {
		return nil, fmt.Errorf("--cloud-config: %w", err)
	}
	clients, err := openstack.NewClients(ctx, cc, openstack.ClientOptions{
		UserAgent:   "stackward-doctor/" + version.Version,
		HTTPTimeout: 15 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("--cloud-config %s: %w", path, err)
	}
	cloud := &Cloud{Compute: clients.Compute, Region: clients.Region, Addresses: nodeaddress.OptionsFromConfig(cc.Networking)}
	if clients.Neutron != nil {
		cloud.Trunks = openstack.NewTrunkCache(clients.Neutron, clients.ProjectID, 0)
	}
	if oct, err := openstack.NewOctavia(clients); err == nil { // no endpoint: no load balancers to list
		cloud.LoadBalancers = oct
	}
	return cloud, nil
}

// WriteText renders the report for a terminal.
func WriteText(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	ew.printf("Nodes: %d (%d uninitialized, %d not Ready); kubelet serving CSRs: %d (%d pending, %d denied)\n",
		r.Nodes, r.UninitializedNodes, r.NotReadyNodes, r.ServingCSRs, r.PendingCSRs, r.DeniedCSRs)
	ew.printf("Cloud: %s\n", r.Cloud)
	if r.CloudError != "" {
		ew.printf("  error: %s\n", r.CloudError)
	}
	threshold, _ := time.ParseDuration(r.CAExpiryWarning)
	for _, ca := range r.ServingCA {
		if line := caLine(ca, threshold); line != "" {
			ew.printf("%s\n", line)
		}
	}
	if r.LoadBalancerError != "" {
		ew.printf("Load balancers: not listed: %s\n", r.LoadBalancerError)
	}
	for _, lb := range r.StuckLoadBalancers {
		ew.printf("\nload balancer %s (%s)", lb.Name, lb.ID)
		if lb.Service != "" {
			ew.printf("  Service %s", lb.Service)
		}
		ew.printf("\n  stuck %s since %s (%s)\n  hint: %s\n", lb.Status, lb.Since.UTC().Format(time.RFC3339), lb.Age, lb.Hint)
	}
	if len(r.Problems) == 0 && r.Findings() == 0 {
		ew.printf("\nNo findings: every node is initialized and Ready, and no serving certificate request needs attention.\n")
		return ew.err
	}
	for _, p := range r.Problems {
		ew.printf("\nnode %s", p.Node)
		if !p.Registered {
			ew.printf(" (no Node object)")
		}
		if p.ProviderID != "" {
			ew.printf("  providerID %s", p.ProviderID)
		}
		if p.NodeIP != "" {
			ew.printf("  --node-ip %s", p.NodeIP)
		}
		ew.printf("\n")
		if v := p.Cloud; v != nil {
			ew.printf("  cloud:  %s\n", cloudLine(v))
		}
		for _, f := range p.Findings {
			ew.printf("  * %s", describe(f))
			if f.CSR != "" {
				ew.printf(" (%s", f.CSR)
				if f.EarlierDenials > 0 {
					ew.printf(", and %d earlier", f.EarlierDenials)
				}
				ew.printf(")")
			}
			ew.printf(", for %s\n", f.Age)
			if f.Reason != "" || f.Message != "" {
				ew.printf("      reason:  %s\n", strings.TrimPrefix(f.Reason+": "+f.Message, ": "))
			}
			if len(f.Requested) > 0 {
				ew.printf("      asks:    %s\n", strings.Join(f.Requested, ", "))
			}
			ew.printf("      do:      %s\n", f.Hint)
		}
	}
	return ew.err
}

func describe(f Finding) string {
	switch f.Kind {
	case NodeUninitialized:
		return "not initialized by the cloud provider"
	case NodeNotReady:
		return "not Ready"
	case ServingCSRPending:
		return "serving certificate request pending"
	case ServingCSRDenied:
		return "serving certificate request denied"
	case ServingCSRNotIssued:
		return "serving certificate approved, not issued"
	}
	return string(f.Kind)
}

func cloudLine(v *CloudView) string {
	switch {
	case v.NotFound:
		return "no server (looked up by " + v.Lookup + ")"
	case !v.Found:
		return "lookup by " + v.Lookup + " failed: " + v.Error
	}
	s := fmt.Sprintf("server %s %q %s, %s in %s; %s", v.ServerID, v.Name, v.Status, v.Flavor, v.Zone, addressList(v))
	if v.Error != "" {
		s += " (" + v.Error + ")"
	}
	return s
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// clusterStuckLoadBalancers is stuckLoadBalancers for the cluster whose
// UID is its kube-system namespace's, as the CCM tags them.
func clusterStuckLoadBalancers(ctx context.Context, client kubernetes.Interface, lbs LoadBalancerLister, now time.Time, after time.Duration) ([]StuckLoadBalancer, error) {
	ns, err := client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("the cluster's UID (namespace kube-system): %w", err)
	}
	return stuckLoadBalancers(ctx, lbs, string(ns.UID), now, after)
}
