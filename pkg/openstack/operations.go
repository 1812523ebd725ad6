package openstack

// retrySafe says, for every operation the adapters make, whether the Caller
// may repeat it after a failure that could go away by itself (5xx, 429, a
// timeout). This is the one place that decides it; an operation missing
// here is tried once (a write nobody vouched for is never repeated), and
// TestEveryOperationDeclaresItsRetryPolicy keeps the table complete.
//
// Reads are safe. So are writes that end in the same state however often
// they arrive: PUTs of a whole value, deletes (a repeat finds nothing), and
// compare-and-swap updates on revision_number (a repeat of one that did
// happen gets a 412, which the caller handles by reading again). A POST
// that creates a resource is not: a create answered with a 5xx may still
// have happened, and repeating it would make a second one. The caller's
// next reconcile finds what the first attempt made (by name and tag)
// instead.
var retrySafe = map[string]map[string]bool{
	ServiceIdentity: {
		"authenticate": true, // a token, not a resource
	},
	ServiceCompute: {
		"get_server":   true,
		"list_servers": true,
		"get_flavor":   true,
	},
	ServiceNetwork: {
		"list_extensions": true,
		"list_networks":   true,
		"list_subnets":    true,
		"get_subnet":      true,

		"list_ports":  true,
		"get_port":    true,
		"update_port": true, // compare-and-swap on revision_number

		"list_trunks": true, // trunks on ports (approver), of the project (TrunkCache)

		"list_floating_ips": true, // the approver's batch listing
		"list_floatingips":  true, // the load balancers' listing
		"create_floatingip": false,
		"update_floatingip": true, // sets port_id to a value
		"delete_floatingip": true,

		"get_router":         true,
		"update_router":      true, // compare-and-swap on revision_number
		"add_extraroutes":    true, // adding a route that is there changes nothing
		"remove_extraroutes": true,

		"list_security_groups":   true,
		"create_security_group":  false,
		"delete_security_group":  true,
		"add_security_group_tag": true, // a PUT of one tag: a repeat finds it there
		// A rule is unique by its fields: a repeat that finds the rule
		// made is answered 409, which the adapter takes as done.
		"create_security_group_rule": true,
		"delete_security_group_rule": true,
	},
	ServiceLoadBalancer: {
		"list_loadbalancers":      true,
		"get_loadbalancer":        true,
		"get_loadbalancer_status": true,
		"list_listeners":          true,
		"list_pools":              true,
		"get_healthmonitor":       true,

		"create_loadbalancer":  false,
		"create_listener":      false,
		"create_pool":          false,
		"create_healthmonitor": false,

		"update_loadbalancer":  true,
		"update_listener":      true,
		"update_pool":          true,
		"update_healthmonitor": true,
		"batch_update_members": true, // the whole member list, PUT

		"delete_loadbalancer":  true,
		"delete_listener":      true,
		"delete_pool":          true,
		"delete_healthmonitor": true,
	},
}

// retryable reports whether operation of service may be repeated.
func retryable(service, operation string) bool {
	return retrySafe[service][operation]
}
