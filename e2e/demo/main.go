// Command demo runs the whole of Stackward on this machine (`make demo`):
// stackward-cloudsim with a seeded project and N servers, a real control
// plane, stackward-ccm and stackward-approver under the chart's RBAC, and N
// hollow kubelets that join with the settings stackward-node derives from the
// simulated metadata service. It shows each node's progress as it happens,
// then a summary, and forwards the apiserver to the host's loopback so that
// kubectl works from the user's own shell until Ctrl-C.
//
// Like the e2e lab it runs in a private network namespace; the outer process
// stays in the host's to serve the forward.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/stackward/stackward/e2e/framework"
)

type options struct {
	nodes       int
	duration    time.Duration
	timeout     time.Duration
	summaryJSON string
	dir         string
	listen      string
	lb          bool
}

func main() {
	var o options
	flag.IntVar(&o.nodes, "n", 5, "Number of servers and nodes.")
	flag.DurationVar(&o.duration, "duration", 0, "How long to keep running once every node is up (0: until Ctrl-C).")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "How long nodes may take to become Ready before the demo reports failure.")
	flag.StringVar(&o.summaryJSON, "summary-json", "", "Write the summary as JSON to this path.")
	flag.StringVar(&o.dir, "dir", filepath.Join(os.TempDir(), "stackward-demo"), "Where the kubeconfig and the log are written (outside the lab).")
	flag.StringVar(&o.listen, "listen", "127.0.0.1:0", "Host address the apiserver is forwarded to.")
	flag.BoolVar(&o.lb, "lb", true, "Create a LoadBalancer Service once the nodes are up and wait for its address (when stackward-ccm runs the service controller).")
	flag.Parse()
	if o.nodes < 1 || o.nodes > 500 {
		fmt.Fprintln(os.Stderr, "demo: -n must be between 1 and 500")
		os.Exit(2)
	}
	if dir := os.Getenv("STACKWARD_TOOLS_DIR"); dir == "" {
		fmt.Fprintln(os.Stderr, "demo: STACKWARD_TOOLS_DIR is not set: run `make demo` (it builds the tools and sets it)")
		os.Exit(2)
	} else if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		fmt.Fprintf(os.Stderr, "demo: the tools in %s are incomplete: run `make tools`\n", dir)
		os.Exit(2)
	}
	framework.RunInLabWithForward(o.listen, framework.ControlPlaneIP+":6443", func(fwd *framework.Forward) int {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return run(ctx, o, fwd)
	})
}
