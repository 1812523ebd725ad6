package approver

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/openstack"
	"github.com/stackward/stackward/pkg/version"
)

// buildCloud loads cfg.CloudConfig (when set) so the addresses follow its
// [Networking] section exactly as the CCM's do, and builds the Cloud from
// it unless one was given. With watchCredentials, credentials rotated in
// the mounted file are taken while ctx lasts, as the CCM takes them: a
// rotated application credential must not leave every CSR pending until
// someone restarts the pod.
func buildCloud(ctx context.Context, cfg *Config, watchCredentials bool) (Cloud, error) {
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
	if cfg.ProjectID == "" {
		cfg.ProjectID = cc.Global.TenantID
	}
	if cfg.Cloud != nil {
		return cfg.Cloud, nil
	}
	clients, err := openstack.WaitForClients(ctx, "stackward-approver", func(ctx context.Context) (*openstack.Clients, error) {
		return openstack.NewClients(ctx, cc, openstack.ClientOptions{
			Registerer: cfg.Registerer,
			UserAgent:  "stackward-approver/" + version.Version,
		})
	})
	if err != nil {
		return nil, fmt.Errorf("--cloud-config %s: %w", cfg.CloudConfig, err)
	}
	if cfg.ProjectID == "" {
		cfg.ProjectID = clients.ProjectID
	}
	if cfg.ProjectID == "" {
		return nil, fmt.Errorf("--cloud-config %s: the credentials are not scoped to a project, so the approver cannot tell which ports are the cluster's: scope them to the cluster's project (tenant-id or tenant-name)", cfg.CloudConfig)
	}
	if clients.ProjectID != "" && clients.ProjectID != cfg.ProjectID {
		return nil, fmt.Errorf("--cloud-config %s: tenant-id %q is not the project the credentials are scoped to (%q)", cfg.CloudConfig, cfg.ProjectID, clients.ProjectID)
	}
	if watchCredentials {
		go openstack.NewCredentialWatch(cfg.CloudConfig, clients, cc.Global).Run(ctx, openstack.CredentialsPollPeriod)
	}
	// Servers, ports and floating IPs are read for every decision (one
	// request of each answers a batch); networks (whose project and
	// sharing only an administrator changes) at most once a minute each.
	ownership := openstack.CachedNetworks(clients.Ownership, time.Minute)
	return NewOpenStackCloud(clients.Compute, ownership, clients.Region, cfg.ProjectID,
		CloudOptions{QPS: cfg.CloudQPS, Burst: cfg.CloudBurst, Window: cfg.CoalesceWindow, DNSSuffixes: cfg.DNSSuffixes}), nil
}
