package loadbalancer

import (
	"errors"
	"fmt"
	"strings"
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
	// ErrFloatingIPOfAnotherNamespace means spec.loadBalancerIP is a kept
	// floating IP that was allocated for a Service of another namespace.
	ErrFloatingIPOfAnotherNamespace = errors.New("floating IP belongs to another namespace")
)

// Reasons of in-progress steps. The service controller records every
// error, RetryErrors included, as a Warning; pkg/provider/app turns the
// Warnings whose message carries one of these (ProgressReason) into Normal
// events with it as their reason.
const (
	// ReasonWaitingForOctavia: Octavia is applying a change (PENDING_*).
	ReasonWaitingForOctavia = "WaitingForOctavia"
	// ReasonApplyingChanges: a change was made and more are queued.
	ReasonApplyingChanges = "ApplyingLoadBalancerChanges"
	// ReasonWaitingForNodeAddresses: an initialized node has no InternalIP yet.
	ReasonWaitingForNodeAddresses = "WaitingForNodeAddresses"
	// ReasonRecreating: a load balancer in ERROR is being replaced.
	ReasonRecreating = "RecreatingLoadBalancer"
	// ReasonAdopting: the upstream CCM's load balancer was just adopted.
	ReasonAdopting = "AdoptingUpstreamLoadBalancer"
	// ReasonWaitingForAdoption: a Service upstream put on another
	// Service's load balancer waits until that Service adopts it.
	ReasonWaitingForAdoption = "WaitingForAdoption"
	// ReasonRenaming: a child of a load balancer named for an older
	// cluster name was renamed, more remain (rename.go).
	ReasonRenaming = "RenamingLoadBalancer"
	// ReasonRenamed: a load balancer named for an older cluster name now
	// has the current one's name (rename.go).
	ReasonRenamed = "RenamedLoadBalancer"
)

const progressMarker = " (in progress, not a failure: "

// notReady asks the service controller to come back after d without
// holding a worker or counting as a failure with backoff: the load
// balancer is busy (PENDING_*) or has more changes queued. The message
// says that this is progress and why (reason), which ProgressReason reads.
func notReady(d time.Duration, reason, format string, args ...any) error {
	return api.NewRetryError(fmt.Sprintf(format, args...)+progressMarker+reason+fmt.Sprintf("; checking again in %s)", d), d)
}

// ProgressReason returns the reason of an in-progress step named in msg
// (an error message of notReady, possibly wrapped), "" when msg is not one.
func ProgressReason(msg string) string {
	i := strings.LastIndex(msg, progressMarker)
	if i < 0 {
		return ""
	}
	rest := msg[i+len(progressMarker):]
	reason, _, ok := strings.Cut(rest, ";")
	if !ok {
		return ""
	}
	switch reason {
	case ReasonWaitingForOctavia, ReasonApplyingChanges, ReasonWaitingForNodeAddresses, ReasonRecreating, ReasonAdopting, ReasonRecreatingMonitors, ReasonWaitingForAdoption,
		ReasonRenaming, ReasonRenamed:
		return reason
	}
	return ""
}

// ReasonLoadBalancerStuck: the load balancer has been PENDING_* for longer
// than StuckAfter (watch.go). A Warning, not progress.
const ReasonLoadBalancerStuck = "LoadBalancerStuck"

const stuckMarker = " (stuck: " + ReasonLoadBalancerStuck

// stuckError asks the service controller to come back after d about a
// stuck load balancer; StuckReason recognises its message.
func stuckError(d time.Duration, format string, args ...any) error {
	return api.NewRetryError(fmt.Sprintf(format, args...)+stuckMarker+"; checking again every "+d.String()+")", d)
}

// StuckReason returns ReasonLoadBalancerStuck when msg (an error message,
// possibly wrapped) says a load balancer is stuck, "" otherwise.
func StuckReason(msg string) string {
	if strings.Contains(msg, stuckMarker+"; ") {
		return ReasonLoadBalancerStuck
	}
	return ""
}

// waiting is notReady for a Service that waits for Octavia (watch.go): its
// message does not name the delay, which changes at every look, so that the
// Events of one wait fold into one with a count.
func waiting(d time.Duration, reason, format string, args ...any) error {
	return api.NewRetryError(fmt.Sprintf(format, args...)+progressMarker+reason+"; checking again as it settles)", d)
}
