package loadbalancer

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/cloud-provider/api"
)

var (
	// ErrDuplicate means several load balancers of this cluster carry one
	// Service's name; nothing is changed until an operator removes one.
	ErrDuplicate = errors.New("several load balancers of this cluster have the name")
	// ErrProvisioningError means Octavia put the load balancer in ERROR.
	ErrProvisioningError = errors.New("load balancer is in provisioning status ERROR")
	// ErrImmutable means the Service asks for a change Octavia cannot make
	// to an existing load balancer (its VIP network, flavor, zone).
	ErrImmutable = errors.New("cannot be changed on an existing load balancer")
	// ErrFloatingIPInUse means spec.loadBalancerIP is a floating IP
	// attached to another port.
	ErrFloatingIPInUse = errors.New("floating IP is attached to another port")
)

// notReady asks the service controller to come back after d without
// holding a worker or counting as a failure with backoff: the load
// balancer is busy (PENDING_*) or has more changes queued.
// The service controller still records a SyncLoadBalancerFailed Warning
// for it, so the message says that this is progress, not a failure.
func notReady(d time.Duration, format string, args ...any) error {
	return api.NewRetryError(fmt.Sprintf(format, args...)+fmt.Sprintf(" (in progress, not a failure: checking again in %s)", d), d)
}
