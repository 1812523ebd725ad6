// Command stackward is the operator's CLI. `stackward doctor` diagnoses why
// nodes do not become Ready; the work is in pkg/doctor.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/stackward/stackward/pkg/doctor"
	"github.com/stackward/stackward/pkg/version"
)

const usage = `stackward: operator tools for Stackward, the OpenStack cloud provider.

Commands:
  doctor    list nodes the cloud provider has not initialized or that are not
            Ready, kubelet serving certificate requests left pending, denied or
            never signed, what the cloud says about each such node, load
            balancers Octavia has left PENDING_*, and what to do
  pki       the kubelet-serving CA: init (before kubeadm init), export and
            import (to further control-plane hosts), rotate
  version   print the version

Run 'stackward <command> -h' for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "doctor":
		return runDoctor(args[1:], stdout, stderr)
	case "pki":
		return runPKI(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, version.Version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "stackward: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// runDoctor exits 0 with no findings, 1 with findings, 2 when it cannot tell.
func runDoctor(args []string, stdout, stderr io.Writer) int {
	cfg := doctor.Config{Out: stdout}
	fs := flag.NewFlagSet("stackward doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "Kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config, or in-cluster).")
	fs.StringVar(&cfg.Context, "context", "", "Kubeconfig context (default: the current one).")
	fs.StringVar(&cfg.CloudConfig, "cloud-config", "", "cloud.conf of the cluster's cloud provider; without it the cloud is not asked.")
	fs.StringVar(&cfg.Output, "o", doctor.OutputText, "Output: text or json.")
	fs.DurationVar(&cfg.Timeout, "timeout", time.Minute, "Give up after this long.")
	fs.StringVar(&cfg.ServingCAFile, "serving-ca", doctor.DefaultServingCAFile, "The kubelet-serving CA certificate whose expiry to check (the chart signer's Secret is checked too when it exists).")
	fs.DurationVar(&cfg.StuckAfter, "lb-stuck-after", doctor.DefaultStuckAfter, "A load balancer of the cluster PENDING_* for this long is a finding (as stackward-ccm's --lb-stuck-after); needs --cloud-config.")
	fs.DurationVar(&cfg.CAExpiryWarning, "ca-expiry-warning", doctor.DefaultCAExpiryWarning, "A kubelet-serving CA expiring within this is a finding (stackward pki rotate).")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: stackward doctor [flags]\n\nExit status: 0 nothing to fix, 1 findings, 2 could not diagnose.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "stackward doctor: unexpected arguments %v\n", fs.Args())
		return 2
	}
	fs.Visit(func(f *flag.Flag) { cfg.ServingCAFileSet = cfg.ServingCAFileSet || f.Name == "serving-ca" })
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	report, err := doctor.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "stackward doctor:", err)
		return 2
	}
	if report.Findings() > 0 {
		return 1
	}
	return 0
}
