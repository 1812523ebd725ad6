// Package cloudsim is Stackward's OpenStack API simulator: Keystone v3, Nova,
// Neutron, Octavia, Glance and the Nova metadata service behind one
// http.Handler.
//
// It exists because no OpenStack can run on a developer machine or in CI and the
// usual per-test fixtures have neither a Keystone catalog nor Octavia's
// asynchronous state machine. The simulator is held to wire fidelity: the real
// gophercloud v2 clients (and other OpenStack clients) must work against it
// unchanged, so the JSON it serves follows what the services return, including
// version discovery, microversions, pagination links and error bodies.
//
// One in-memory state, guarded by one lock, backs every service: a server's
// addresses in Nova are derived from its Neutron ports, and a load balancer's
// VIP is a Neutron port, so the services can never disagree with each other.
//
// Every collection is declared once as a resource (kit.go): its store,
// owner, view and error wording; list, show, update and delete handlers,
// project scoping and policy come from the kit. Tokens carry roles (admin
// implies member implies reader; Octavia's load-balancer_member and
// load-balancer_observer), and every request is checked against the
// services' default policies (policy.go): readers cannot write, all_tenants
// needs admin, a project changes only its own resources.
//
// Everything is served on one listener, at the address the client used:
// Keystone at / and /v3 (the auth URL), Nova at /compute/v2.1, Neutron at
// /networking (unversioned, as clients discover v2.0), Octavia at
// /load-balancer (v2 and v2.0), Glance at /image, the metadata service at /openstack and
// /latest, the admin API at /admin/ and metrics at /metrics.
//
// Besides the OpenStack APIs it offers what tests and benchmarks need: a seed
// file, a Go API and an admin HTTP API to change the cloud at run time, fault
// injection per service and operation, token revocation and per-operation
// call counters (also as Prometheus metrics).
package cloudsim
