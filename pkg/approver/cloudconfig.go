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
	return NewOpenStackCloud(clients.Compute, clients.Region), nil
}

// NewOpenStackCloud returns the Cloud that asks Nova through compute. It
// deliberately does not use the CCM's ServerCache: an approval rests on the
// cloud's answer now, not on a listing a few seconds old (a floating IP just
// moved to another server must not be approved for the old one).
func NewOpenStackCloud(compute openstack.Compute, region string) Cloud {
	return &openStackCloud{compute: compute, region: region}
}

type openStackCloud struct {
	compute openstack.Compute
	region  string
}

func (c *openStackCloud) ServerForNode(ctx context.Context, providerID, nodeName string) (*openstack.Server, error) {
	if providerID != "" && c.region != "" {
		if region, _, err := openstack.ParseProviderID(providerID); err == nil && region != "" && region != c.region {
			// Another region's instance may well exist: this cloud.conf
			// cannot tell, so no verdict (the CCM answers the same way).
			return nil, fmt.Errorf("provider ID %s is in region %q, this cloud.conf is for region %q", providerID, region, c.region)
		}
	}
	srv, err := openstack.ServerForNode(ctx, c.compute, providerID, nodeName)
	if err != nil {
		return nil, fmt.Errorf("server for node %q: %w", nodeName, err)
	}
	return srv, nil
}
