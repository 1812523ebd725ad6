package provider

import cloudprovider "k8s.io/cloud-provider"

// Routes is not served yet. Neutron router routes (their own issue) add a
// routes type implementing cloudprovider.Routes in this file, built from
// [Route] router-id (c.cfg.Route, already parsed), returned here when a
// router is configured. The route controller is then added to the CCM's
// controller map in pkg/provider/app (its RBAC is already granted).
func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return nil, false }
