// Package openstack is Stackward's only door to the OpenStack APIs: every
// gophercloud call of the CCM and the approver is made here (Keystone in
// clients.go, Nova in nova.go, Neutron in neutron*.go and ownership*.go,
// Octavia in octavia*.go; each adapter is a type named after its service). It turns gophercloud v2 responses
// into one set of small domain types (one Port, one FloatingIP), and the
// packages that use them (loadbalancer, routes, approver, provider)
// declare the narrow ctx-first interfaces they consume.
//
// Every call goes through one instrumented helper that records its duration
// and errors by service and operation, and retries only what operations.go
// declares safe to repeat (reads, idempotent writes; never a create).
// Errors keep their meaning: a 404 becomes ErrNotFound, everything else stays
// an unknown failure that callers must never treat as "not found".
package openstack
