package approver

import (
	"context"
	"fmt"
	"slices"
	"time"

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
	if cfg.ProjectID == "" {
		cfg.ProjectID = cc.Global.TenantID
	}
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
	if cfg.ProjectID == "" {
		cfg.ProjectID = clients.ProjectID
	}
	if cfg.ProjectID == "" {
		return nil, fmt.Errorf("--cloud-config %s: the credentials are not scoped to a project, so the approver cannot tell which ports are the cluster's: scope them to the cluster's project (tenant-id or tenant-name)", cfg.CloudConfig)
	}
	if clients.ProjectID != "" && clients.ProjectID != cfg.ProjectID {
		return nil, fmt.Errorf("--cloud-config %s: tenant-id %q is not the project the credentials are scoped to (%q)", cfg.CloudConfig, cfg.ProjectID, clients.ProjectID)
	}
	// Ports and floating IPs are asked at every decision; networks (whose
	// project and sharing only an administrator changes) at most once a
	// minute each.
	ownership := openstack.CachedNetworks(clients.Ownership, time.Minute)
	return NewOpenStackCloud(clients.Compute, ownership, clients.Region, cfg.ProjectID), nil
}

// NewOpenStackCloud returns the Cloud that asks Nova through compute and
// Neutron through ownership, for the ports of project projectID. It
// deliberately does not use the CCM's ServerCache: an approval rests on the
// cloud's answer now, not on a listing a few seconds old (a floating IP just
// moved to another server must not be approved for the old one).
func NewOpenStackCloud(compute openstack.Compute, ownership openstack.Ownership, region, projectID string) Cloud {
	return &openStackCloud{compute: compute, ownership: ownership, region: region, projectID: projectID}
}

type openStackCloud struct {
	compute   openstack.Compute
	ownership openstack.Ownership
	region    string
	projectID string
}

// ServerOwnership asks Neutron for the server's ports of the project, then
// the floating IPs on them and their networks: three requests.
func (c *openStackCloud) ServerOwnership(ctx context.Context, srv *openstack.Server) (nodeaddress.CloudView, error) {
	v := nodeaddress.CloudView{Server: srv}
	if c.ownership == nil {
		return v, fmt.Errorf("ownership of server %s: no Neutron client", srv.ID)
	}
	ports, err := c.ownership.ServerPorts(ctx, srv.ID, c.projectID)
	if err != nil {
		return v, err
	}
	v.Ports = ports
	var portIDs, networkIDs []string
	for _, p := range ports {
		portIDs = append(portIDs, p.ID)
		if !slices.Contains(networkIDs, p.NetworkID) {
			networkIDs = append(networkIDs, p.NetworkID)
		}
	}
	if v.FloatingIPs, err = c.ownership.FloatingIPsOfPorts(ctx, portIDs); err != nil {
		return v, err
	}
	if v.Networks, err = c.ownership.Networks(ctx, networkIDs); err != nil {
		return v, err
	}
	return v, nil
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
