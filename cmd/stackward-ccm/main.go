// Command stackward-ccm is the OpenStack cloud-controller-manager. All of it
// lives in pkg/provider/app so that tests run exactly what ships.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/component-base/logs"
	// The JSON log format (--logging-format=json), as in stackward-approver.
	// Formats must be registered before the command adds its logging flags.
	_ "k8s.io/component-base/logs/json/register"

	"github.com/stackward/stackward/pkg/provider/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	logs.InitLogs()
	err := app.Run(ctx, os.Args[1:], app.Options{})
	logs.FlushLogs()
	stop()
	if err != nil {
		os.Exit(1)
	}
}
