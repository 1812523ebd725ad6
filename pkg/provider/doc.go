// Package provider is Stackward's "openstack" cloudprovider.Interface: what
// k8s.io/cloud-provider's controllers ask the cloud about nodes (Cloud,
// built by New) and, with WithServices, about Services of type
// LoadBalancer (Octavia, pkg/loadbalancer) and routes (Neutron,
// pkg/routes).
//
// It is built explicitly by New from an already loaded config and already
// built OpenStack clients, so a test or the e2e suite can run it against a
// fake or the simulator; nothing registers itself in init() and nothing is
// global. It never talks to gophercloud directly: every cloud call goes
// through pkg/openstack, whose errors keep the one distinction that matters
// here, "definitively not found" versus "could not tell". Only the first may
// make a Node disappear.
package provider
