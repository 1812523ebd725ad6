// Command stackward-cloudsim serves a simulated OpenStack cloud (Keystone,
// Nova, Neutron, Octavia, metadata) for tests, the local lab and demos.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/stackward/stackward/internal/cloudsim"
)

func main() {
	var cfg cloudsim.Config
	flag.StringVar(&cfg.SeedPath, "seed", "", "YAML seed file (default: a small demo cloud)")
	flag.StringVar(&cfg.Listen, "listen", "127.0.0.1:0", "address to serve on")
	flag.DurationVar(&cfg.TokenTTL, "token-ttl", 0, "Keystone token lifetime (default 1h)")
	flag.DurationVar(&cfg.OctaviaDelay, "octavia-delay", 0, "time Octavia objects stay PENDING_*")
	flag.DurationVar(&cfg.Latency, "latency", 0, "latency added to every API call")
	flag.StringVar(&cfg.Region, "region", "RegionOne", "catalog region")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cloudsim.Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "stackward-cloudsim:", err)
		os.Exit(1)
	}
}
