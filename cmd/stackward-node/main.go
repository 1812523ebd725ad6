// Command stackward-node runs on a new OpenStack VM before the kubelet (or
// kubeadm join) starts and writes the kubelet's node-specific settings:
// --cloud-provider=external, --provider-id and --node-ip, read from the Nova
// metadata service or config drive. All the work is in pkg/nodeboot.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/nodeboot"
	"github.com/stackward/stackward/pkg/version"
)

// listFlag is a repeatable flag that also splits on commas.
type listFlag struct {
	vals  *[]string
	reset bool // the first Set replaces the default
}

func (l *listFlag) String() string {
	if l.vals == nil {
		return ""
	}
	return strings.Join(*l.vals, ",")
}

func (l *listFlag) Set(s string) error {
	if !l.reset {
		*l.vals = nil
		l.reset = true
	}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l.vals = append(*l.vals, p)
		}
	}
	return nil
}

const usageHeader = `stackward-node reads what OpenStack says about this VM (Nova metadata service
or config drive) and writes the kubelet settings a cluster with an external
cloud provider (Stackward) needs: --cloud-provider=external,
--provider-id=openstack:///<server uuid> (openstack://<region>/<server uuid>
with --region) and --node-ip=<fixed IP>.
Run it before kubeadm join (or before the kubelet starts).

Files written into --output-dir (each replaced atomically):
  kubelet.env                 KUBELET_EXTRA_ARGS="--cloud-provider=external --provider-id=... --node-ip=..."
  20-stackward.conf           systemd drop-in for kubelet.service reading kubelet.env
                              (install into /etc/systemd/system/kubelet.service.d/)
  kubeadm-patches/kubeletconfiguration+strategic.yaml
                              kubeadm patch setting providerID (JoinConfiguration patches.directory)
  join-configuration.yaml     only with --join-config: that file completed with
                              nodeRegistration.kubeletExtraArgs and patches.directory

It refuses (exit status 1, naming the field and the source) when the metadata
has no uuid, the sources disagree, or no address of the requested family exists.

Usage: stackward-node [flags]

Flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	klog.Flush()
	os.Exit(code)
}

// run is main without the process: it returns the exit status, 0 on
// success, 1 when stackward-node refused or failed, 2 on a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg := nodeboot.DefaultConfig()
	fs := flag.NewFlagSet("stackward-node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHeader)
		fs.PrintDefaults()
	}
	fs.Var(&listFlag{vals: &cfg.SearchOrder}, "search-order",
		"where to read the metadata, in order, comma separated: metadataService, configDrive (the upstream CCM's words); the first source that answers is used")
	fs.BoolVar(&cfg.CrossCheck, "cross-check", cfg.CrossCheck,
		"also read the later sources in --search-order and refuse if one disagrees with the first on uuid or name; a later source that is absent is skipped, but an unreachable metadata service costs up to --attempts x --timeout, so turn this off on clouds without one")
	fs.StringVar(&cfg.MetadataURL, "metadata-url", cfg.MetadataURL,
		"base URL of the Nova metadata service; /openstack/latest/meta_data.json and network_data.json are read below it")
	fs.StringVar(&cfg.MetadataSourceIP, "metadata-source-ip", "",
		"local IP to send metadata requests from (the metadata proxy identifies the instance by it); default: chosen by the kernel")
	fs.StringVar(&cfg.MetadataInstanceID, "metadata-instance-id", "",
		"send this server ID as header X-Stackward-Instance-ID (understood by stackward-cloudsim only; a real cloud ignores it)")
	fs.DurationVar(&cfg.RequestTimeout, "timeout", cfg.RequestTimeout,
		"timeout of one metadata request, connection included")
	fs.IntVar(&cfg.Attempts, "attempts", cfg.Attempts,
		"metadata requests per document before giving up on the metadata service; connection errors, timeouts, 429 and 5xx are retried, 404 is not")
	fs.DurationVar(&cfg.RetryBackoff, "retry-backoff", cfg.RetryBackoff,
		"wait before the first retry; doubled after each, at most 5s")
	fs.StringVar(&cfg.ConfigDriveDir, "config-drive-dir", "",
		"a directory holding the config drive's contents (openstack/latest/...); default: mount the device labelled config-2 read-only into a temporary directory")
	fs.StringVar(&cfg.Network, "network", "",
		"choose the node IP only from this network: a Neutron network UUID (network_data.json network_id), a network_data id such as network0, a link id, or a Nova device tag of the NIC (--nic ...,tag=NAME); Neutron network names are not in the metadata")
	fs.StringVar(&cfg.Network, "network-name", "", "the same as --network")
	fs.Var(&listFlag{vals: &cfg.PreferCIDRs}, "prefer-cidr",
		"prefer node IPs inside this CIDR; repeatable, earlier wins; addresses outside every CIDR stay eligible, after the others")
	fs.StringVar(&cfg.IPFamily, "ip-family", cfg.IPFamily,
		"ipv4, ipv6, or dual (one IPv4 and one IPv6: --node-ip=<v4>,<v6>)")
	fs.StringVar(&cfg.Region, "region", "",
		"OpenStack region; when set the provider ID is openstack://<region>/<uuid>, the form the CCM writes with --provider-id-with-region or OS_CCM_REGIONAL=true (give its cloud.conf region)")
	fs.StringVar(&cfg.OutputDir, "output-dir", cfg.OutputDir,
		"directory to write the files into (created if missing)")
	fs.StringVar(&cfg.JoinConfigTemplate, "join-config", "",
		"a kubeadm v1beta4 JoinConfiguration (e.g. bootstrap/join-configuration.yaml) to complete with this node's kubeletExtraArgs; written as <output-dir>/join-configuration.yaml")
	fs.BoolVar(&cfg.Print, "print", false,
		"print the settings as shell KEY=VALUE lines (STACKWARD_PROVIDER_ID, STACKWARD_NODE_IP, KUBELET_EXTRA_ARGS, ...) and write no file")
	verbosity := fs.Int("v", 0, "log verbosity (logs go to stderr)")
	showVersion := fs.Bool("version", false, "print the version and exit")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "stackward-node: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.Version)
		return 0
	}
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("v", strconv.Itoa(*verbosity))
	klog.SetOutput(stderr)
	klog.LogToStderr(false)

	cfg.Stdout = stdout
	ctx = klog.NewContext(ctx, klog.Background())
	if err := nodeboot.Run(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "stackward-node: %v\n", err)
		return 1
	}
	return 0
}
