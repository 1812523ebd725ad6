// Command stackward-approver approves kubelet serving certificate requests
// only after checking every requested name and IP against the cloud. It runs
// as a sidecar of stackward-ccm; see pkg/approver for the rules. All of the
// command lives in pkg/approver/app so that tests run exactly what ships.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/stackward/stackward/pkg/approver/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := app.Run(ctx, os.Args[1:], app.Options{})
	stop()
	os.Exit(app.ExitCode(err))
}
