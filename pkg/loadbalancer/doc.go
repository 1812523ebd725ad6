// Package loadbalancer orchestrates the Octavia load balancer of each
// Service of type LoadBalancer: a load balancer per Service (or shared by
// several, shared.go), a listener
// per port, a pool per listener whose members are the nodes' InternalIPs on
// the NodePort, an optional health monitor, and a floating IP for the VIP.
//
// A new load balancer is created in one fully populated call (on the OVN
// provider without its monitors, providers.go). Octavia locks a load
// balancer after every change (PENDING_*), so the manager never waits for
// it: a busy load balancer, or one with more changes queued, returns a
// k8s.io/cloud-provider RetryError and the service controller comes back
// after Manager.Requeue, its worker free for other Services. Every sync,
// of a Service's own, adopted or shared load balancer, is one pipeline
// (pipeline.go): prepare (options, which load balancer, provider, VIP and
// member subnet, spec), apply the next planned change (plan.go: outside a
// create Octavia takes one object per call, so a new port is a listener,
// then its pool, members and monitor; a node change is one batch member
// update per pool), finish (security group, status).
//
// Load balancers are found by name and by the cluster UID tag (names.go
// builds every name, tag and description), so two clusters sharing a
// --cluster-name never take each other's, and only floating IPs whose
// description carries this cluster's marker are ever released. The one
// exception is a load balancer the upstream OpenStack CCM made for the
// Service, adopted only on evidence that it is this Service's: its
// status.loadBalancer.ingress shows its address (adopt.go); its floating
// IP is released when upstream would have released it. No annotation
// alone ever selects, joins or deletes what is not already the Service's:
// consent.go states and enforces the namespace boundary of shared load
// balancers, portid.go the VIP ports a Service may use.
//
// Features beyond that tree live in their own files: shared load
// balancers (shared.go), per-Service security groups on the member ports
// (secgroups.go), TLS and HTTP listeners (tls.go), IP families and
// dual-stack VIPs (dualstack.go), recreation of a load balancer in ERROR
// (recreate.go), member selection (members.go), floating subnets, classes
// and VIP ports (networks.go), ingress hostnames (hostname.go) and what
// each Octavia provider accepts (providers.go: the OVN provider's
// defaults and refusals).
//
// Every cloud call goes through pkg/openstack (its Octavia and Neutron
// adapters, their domain types and retry policy); this package declares
// only the narrow interfaces it consumes (cloud.go, secgroups.go), which
// the hand fakes of its logic tests implement too.
//
// docs/reference/load-balancers.md is the reference for every annotation,
// docs/reference/cloud-conf.md for every [LoadBalancer] key, and both say
// where Stackward differs from the upstream OpenStack CCM.

package loadbalancer
