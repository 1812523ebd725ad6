package provider

import cloudprovider "k8s.io/cloud-provider"

// LoadBalancer is not served yet. The Octavia support (its own issue) adds
// a loadBalancers type implementing cloudprovider.LoadBalancer in this
// file, its orchestration in a separate package, and returns it here from
// the [LoadBalancer] config (c.cfg.LoadBalancer, already parsed). The
// service controller is then added to the CCM's controller map in
// pkg/provider/app and services / services/status to the chart's RBAC.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return nil, false }
