package approver

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/nodeaddress"
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
	return nil, errors.New("--cloud-config: building the OpenStack clients is not wired yet")
}
