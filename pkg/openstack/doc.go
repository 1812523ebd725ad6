// Package openstack is Stackward's only door to the OpenStack APIs. It turns
// gophercloud v2 responses into the small domain types below, behind
// ctx-first interfaces (one per service) that the CCM and the approver share.
//
// Every call goes through one instrumented helper that records its duration
// and errors by service and operation, and retries what is safe to retry.
// Errors keep their meaning: a 404 becomes ErrNotFound, everything else stays
// an unknown failure that callers must never treat as "not found".
package openstack
