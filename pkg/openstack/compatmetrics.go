package openstack

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// The upstream openstack-cloud-controller-manager exports every OpenStack
// call as openstack_api_request_duration_seconds, openstack_api_requests_total
// and openstack_api_request_errors_total, labelled request="<resource>_<verb>"
// (server_get, loadbalancer_create, router_update ...). Dashboards and
// alerts built on them keep working after the switch because the Caller
// records the same series beside its own, with upstream's label values
// where upstream makes the same call. Like Stackward's own series they count
// each attempt (upstream makes one per call).

// upstreamRequests is upstream's request label of our operations. Calls
// upstream does not make are named in its style by upstreamRequest.
var upstreamRequests = map[string]string{
	"get_server":   "server_get",
	"list_servers": "server_list",
	"get_flavor":   "flavor_get",

	"list_extensions":   "network_extension_list",
	"list_networks":     "network_list",
	"list_subnets":      "subnet_list",
	"get_subnet":        "subnet_get",
	"list_ports":        "port_list",
	"update_port":       "port_update",
	"list_floating_ips": "floating_ip_list",
	"list_floatingips":  "floating_ip_list",
	"create_floatingip": "floating_ip_create",
	"update_floatingip": "floating_ip_update",
	"delete_floatingip": "floating_ip_delete",
	"get_router":        "router_get",
	// Upstream labels extraroute-atomic's calls as router updates too.
	"update_router":              "router_update",
	"add_extraroutes":            "router_update",
	"remove_extraroutes":         "router_update",
	"list_security_groups":       "security_group_list",
	"create_security_group":      "security_group_create",
	"delete_security_group":      "security_group_delete",
	"create_security_group_rule": "security_group_rule_create",
	"delete_security_group_rule": "security_group_rule_delete",

	"list_loadbalancers":   "loadbalancer_list",
	"get_loadbalancer":     "loadbalancer_get",
	"create_loadbalancer":  "loadbalancer_create",
	"update_loadbalancer":  "loadbalancer_update",
	"delete_loadbalancer":  "loadbalancer_delete",
	"list_listeners":       "loadbalancer_listener_list",
	"create_listener":      "loadbalancer_listener_create",
	"update_listener":      "loadbalancer_listener_update",
	"delete_listener":      "loadbalancer_listener_delete",
	"list_pools":           "loadbalancer_pool_list",
	"create_pool":          "loadbalancer_pool_create",
	"update_pool":          "loadbalancer_pool_update",
	"delete_pool":          "loadbalancer_pool_delete",
	"batch_update_members": "loadbalancer_members_update",
	"get_healthmonitor":    "loadbalancer_healthmonitor_get",
	"create_healthmonitor": "loadbalancer_healthmonitor_create",
	"update_healthmonitor": "loadbalancer_healthmonitor_update",
	"delete_healthmonitor": "loadbalancer_healthmonitor_delete",
}

// upstreamRequest is the request label of operation: upstream's name, or
// "<resource>_<verb>" from our "<verb>_<resource>" (get_port → port_get;
// authenticate → identity_authenticate).
func upstreamRequest(service, operation string) string {
	if r, ok := upstreamRequests[operation]; ok {
		return r
	}
	verb, resource, ok := strings.Cut(operation, "_")
	if !ok {
		return service + "_" + operation
	}
	return resource + "_" + verb
}

// upstreamCallMetrics are upstream's three series.
type upstreamCallMetrics struct {
	duration      *prometheus.HistogramVec
	total, errors *prometheus.CounterVec
}

func newUpstreamCallMetrics(reg prometheus.Registerer) (*upstreamCallMetrics, error) {
	m := &upstreamCallMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "openstack_api_request_duration_seconds",
			Help:    "Latency of an OpenStack API call, by upstream openstack-cloud-controller-manager's request name (each attempt).",
			Buckets: prometheus.DefBuckets, // upstream's: the library default
		}, []string{"request"}),
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "openstack_api_requests_total",
			Help: "OpenStack API calls, by upstream openstack-cloud-controller-manager's request name (each attempt).",
		}, []string{"request"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "openstack_api_request_errors_total",
			Help: "Failed OpenStack API calls, by upstream openstack-cloud-controller-manager's request name (each attempt).",
		}, []string{"request"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.duration, err = register(reg, m.duration); err != nil {
		return nil, err
	}
	if m.total, err = register(reg, m.total); err != nil {
		return nil, err
	}
	if m.errors, err = register(reg, m.errors); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *upstreamCallMetrics) observe(service, operation string, seconds float64, failed bool) {
	r := upstreamRequest(service, operation)
	m.duration.WithLabelValues(r).Observe(seconds)
	m.total.WithLabelValues(r).Inc()
	if failed {
		m.errors.WithLabelValues(r).Inc()
	}
}
