package approver

import "fmt"

// Verdict is what a check concluded.
type Verdict int

const (
	// Continue means the check passed (or does not apply); the next check runs.
	Continue Verdict = iota
	// Approve ends evaluation: the request is approved.
	Approve
	// Deny ends evaluation: the request is denied (or left pending, by flag).
	Deny
	// Ignore ends evaluation without touching the request: it is not ours.
	Ignore
	// Wait ends evaluation leaving the request pending, with an Event, to
	// be looked at again later: the answer may change (an instance that is
	// shut off may be started).
	Wait
)

func (v Verdict) String() string {
	switch v {
	case Continue:
		return "continue"
	case Approve:
		return "approve"
	case Deny:
		return "deny"
	case Ignore:
		return "ignore"
	case Wait:
		return "wait"
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// Decision is the outcome of one check or of a whole evaluation. Reason is
// a CamelCase word (it becomes the CSR condition reason, the Event reason and
// a metric label); Message says, for a person, what was found.
type Decision struct {
	Verdict Verdict
	Reason  string
	Message string
	// Warnings are misconfigurations found on the way (an approval stands
	// regardless); the controller reports each once.
	Warnings []Warning
}

// Warning is a misconfiguration for an operator to fix.
type Warning struct {
	Reason  string
	Message string
}

// ReasonControlPlaneEndpointIsNodeAddress: a configured control-plane
// endpoint is a node's own, cloud-verified address; only addresses no node
// owns belong there.
const ReasonControlPlaneEndpointIsNodeAddress = "ControlPlaneEndpointIsNodeAddress"

func tooLarge(n int) (Decision, error) {
	return deny(ReasonRequestTooLarge, "spec.request is %d bytes; a kubelet's is under 2 KiB, and at most %d are looked at", n, maxRequestBytes)
}

// Reasons. Each names what a person has to look at.
const (
	// ReasonVerified: every check passed against the cloud.
	ReasonVerified = "StackwardVerified"

	ReasonNotNodeRequestor  = "NotNodeRequestor"
	ReasonSubjectMismatch   = "SubjectMismatch"
	ReasonInvalidRequest    = "InvalidRequest"
	ReasonDisallowedUsages  = "DisallowedUsages"
	ReasonDisallowedSAN     = "DisallowedSAN"
	ReasonNoIPSAN           = "NoIPSAN"
	ReasonForbiddenDNSName  = "ForbiddenDNSName"
	ReasonCARequested       = "CARequested"
	ReasonWeakKey           = "WeakKey"
	ReasonExpirationTooLong = "ExpirationTooLong"
	ReasonInstanceNotFound  = "InstanceNotFound"
	// ReasonInstanceAmbiguous (Wait): several servers carry the node's name.
	ReasonInstanceAmbiguous    = "InstanceAmbiguous"
	ReasonInvalidProviderID    = "InvalidProviderID"
	ReasonInstanceDeleted      = "InstanceDeleted"
	ReasonInstanceNameMismatch = "InstanceNameMismatch"
	ReasonIPNotOfInstance      = "IPNotOfInstance"
	ReasonDNSNameNotOfInstance = "DNSNameNotOfInstance"
	ReasonSARDenied            = "SubjectAccessReviewDenied"
	// ReasonForbiddenIP: an IP no kubelet may have (Service CIDR,
	// control-plane endpoint, loopback, link-local, multicast, unspecified).
	ReasonForbiddenIP = "ForbiddenIP"
	// ReasonUntrustedAddress: the cloud reports the IP for the instance,
	// but not as an address the cloud controls (an accessIPv4, a port of
	// another project or network); the message says which.
	ReasonUntrustedAddress = "UntrustedAddress"
	// ReasonAddressNotReady (Wait): an IP SAN is on a port of the instance
	// that is not ACTIVE (not plugged yet, or the network backend is down);
	// the request stays pending until it is.
	ReasonAddressNotReady = "AddressNotReady"
	// ReasonInstanceOtherProject: the instance is not in the cluster's project.
	ReasonInstanceOtherProject = "InstanceOfOtherProject"
	// ReasonNonASCIIName: a node or server name with non-ASCII characters.
	ReasonNonASCIIName = "NonASCIIName"
	// ReasonInstanceNotRunning (Wait): the instance cannot run a kubelet
	// now; the request stays pending until it does.
	ReasonInstanceNotRunning = "InstanceNotRunning"
	// ReasonNodeNotRegistered (Wait): no Node of the requestor's name
	// exists (or it is being deleted); the request stays pending until the
	// kubelet registers it.
	ReasonNodeNotRegistered = "NodeNotRegistered"
	// ReasonTooManySANs: more SANs than any node has names and addresses.
	ReasonTooManySANs = "TooManySANs"
	// ReasonRequestTooLarge: spec.request larger than a kubelet ever sends.
	ReasonRequestTooLarge = "RequestTooLarge"

	// Reasons of outcomes that are not decisions (metrics, Events, logs).
	reasonOtherSigner   = "OtherSigner"
	reasonCouldNotCheck = "CouldNotCheck"
	reasonOverNodeCap   = "TooManyPendingForNode"
	reasonUpdateFailed  = "ApprovalUpdateFailed"
)

func cont() (Decision, error) { return Decision{Verdict: Continue}, nil }

func deny(reason, format string, args ...any) (Decision, error) {
	return Decision{Verdict: Deny, Reason: reason, Message: fmt.Sprintf(format, args...)}, nil
}
