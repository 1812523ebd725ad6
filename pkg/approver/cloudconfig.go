package approver

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/openstack"
	"github.com/stackward/stackward/pkg/version"
)

// buildCloud loads cfg.CloudConfig (when set) so the addresses follow its
// [Networking] section exactly as the CCM's do, and builds the Cloud from
// it unless one was given.
func buildCloud(ctx context.Context, cfg *Config) (Cloud, error) {
	if cfg.CloudConfig == "" {
		return cfg.Cloud, nil
	}
	cc, warnings, err := config.Load(cfg.CloudConfig)
	for _, w := range warnings {
		klog.FromContext(ctx).Info("Cloud config warning", "warning", w.String())
	}
	if err != nil {
		return nil, fmt.Errorf("--cloud-config: %w", err)
	}
	cfg.Addresses = nodeaddress.OptionsFromConfig(cc.Networking)
	if cfg.Cloud != nil {
		return cfg.Cloud, nil
	}
	clients, err := openstack.NewClients(ctx, cc, openstack.ClientOptions{
		Registerer: cfg.Registerer,
		UserAgent:  "stackward-approver/" + version.Version,
	})
	if err != nil {
		return nil, fmt.Errorf("--cloud-config %s: %w", cfg.CloudConfig, err)
	}
	return NewOpenStackCloud(clients.Compute, clients.Region, CloudOptions{QPS: cfg.CloudQPS, Burst: cfg.CloudBurst, Window: cfg.CoalesceWindow}), nil
}
