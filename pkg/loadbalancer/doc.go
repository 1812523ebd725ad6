// Package loadbalancer orchestrates the Octavia load balancer of each
// Service of type LoadBalancer: one load balancer per Service, a listener
// per port, a pool per listener whose members are the nodes' InternalIPs on
// the NodePort, an optional health monitor, and a floating IP for the VIP.
//
// A new load balancer is created in one fully populated call. Octavia
// locks a load balancer after every change (PENDING_*), so the manager
// never waits for it: a busy load balancer, or one with more changes
// queued, returns a k8s.io/cloud-provider RetryError and the service
// controller comes back after Manager.Requeue, its worker free for other
// Services. Changes to an existing tree are planned (plan.go) as the
// fewest calls: a new port is one listener create with its pool, members
// and monitor nested; a node change is one batch member update per pool.
//
// Load balancers are found by name and by the cluster UID tag (names.go
// builds every name, tag and description), so two clusters sharing a
// --cluster-name never adopt each other's, and only floating IPs whose
// description carries this cluster's marker are ever released.
//
// The README section below lists what a Service can ask for.
//
// # Services of type LoadBalancer (Octavia)
//
// Stackward creates one Octavia load balancer per Service of type
// LoadBalancer, named kube_service_<cluster-name>_<namespace>_<name>
// (shortened with a hash when longer than 255 characters) and tagged
// kube_cluster_uid=<UID of the kube-system namespace>. Protocols TCP, UDP
// and SCTP. Settings come from [LoadBalancer] in cloud.conf; these Service
// annotations override them for one Service. An invalid value is reported
// as a SyncLoadBalancerFailed Event on the Service naming the annotation
// and the value, and nothing is changed in the cloud.
//
//	Annotation                                                 Value                      Default ([LoadBalancer] key)
//	service.beta.kubernetes.io/openstack-internal-load-balancer  true|false                 internal-lb; true: no floating IP, the VIP is the ingress
//	loadbalancer.openstack.org/floating-network-id             network ID                 floating-network-id, else the only external network
//	loadbalancer.openstack.org/floating-subnet-id              subnet ID                  floating-subnet-id
//	loadbalancer.openstack.org/keep-floatingip                 true|false                 false: a floating IP Stackward allocated is released on delete
//	loadbalancer.openstack.org/subnet-id                       VIP subnet ID              subnet-id, else the subnet of the nodes' addresses (at creation only)
//	loadbalancer.openstack.org/network-id                      VIP network ID             network-id (at creation only)
//	loadbalancer.openstack.org/member-subnet-id                members' subnet ID         member-subnet-id
//	loadbalancer.openstack.org/flavor-id                       Octavia flavor ID          flavor-id (at creation only)
//	loadbalancer.openstack.org/availability-zone               Octavia AZ                 availability-zone (at creation only)
//	loadbalancer.openstack.org/lb-method                       ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP, SOURCE_IP_PORT   lb-method
//	loadbalancer.openstack.org/proxy-protocol                  true|v1|v2|false           false; TCP ports only (pool protocol PROXY or PROXYV2)
//	loadbalancer.openstack.org/connection-limit                integer >= -1              -1 (unlimited)
//	loadbalancer.openstack.org/timeout-client-data             milliseconds               Octavia's default
//	loadbalancer.openstack.org/timeout-member-connect          milliseconds               Octavia's default
//	loadbalancer.openstack.org/timeout-member-data             milliseconds               Octavia's default
//	loadbalancer.openstack.org/timeout-tcp-inspect             milliseconds               Octavia's default
//	loadbalancer.openstack.org/enable-health-monitor           true|false                 create-monitor; always on with externalTrafficPolicy Local
//	loadbalancer.openstack.org/health-monitor-delay            seconds                    monitor-delay (5)
//	loadbalancer.openstack.org/health-monitor-timeout          seconds, <= delay          monitor-timeout (3)
//	loadbalancer.openstack.org/health-monitor-max-retries      integer >= 1               monitor-max-retries (1)
//	loadbalancer.openstack.org/health-monitor-max-retries-down integer >= 1               monitor-max-retries-down (3)
//
// Service fields: spec.loadBalancerIP is the floating IP to use (an
// existing unattached one is attached and never released; otherwise it is
// allocated with that address), or the VIP of an internal load balancer.
// spec.loadBalancerSourceRanges (or the
// service.beta.kubernetes.io/load-balancer-source-ranges annotation)
// becomes the listeners' allowed_cidrs. sessionAffinity: ClientIP is the
// pools' SOURCE_IP session persistence. externalTrafficPolicy: Local adds
// an HTTP health monitor on the healthCheckNodePort (GET /healthz), so only
// nodes with a ready endpoint get traffic.
//
// A floating IP already on the VIP port is reused. On delete the load
// balancer goes with all its children (cascade) and its VIP port; a floating
// IP is released only if Stackward allocated it for this cluster (its
// description ends with "[stackward kube_cluster_uid=<UID>]") and
// keep-floatingip is not true; any other is only detached.
//
// Changes Octavia cannot make in place (VIP subnet or network, flavor,
// availability zone, VIP address) are refused with an Event rather than
// ignored; delete and recreate the Service to apply them.
package loadbalancer
