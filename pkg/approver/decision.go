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
}

// Reasons. Each names what a person has to look at.
const (
	// ReasonVerified: every check passed against the cloud.
	ReasonVerified = "StackwardVerified"

	ReasonNotNodeRequestor     = "NotNodeRequestor"
	ReasonSubjectMismatch      = "SubjectMismatch"
	ReasonInvalidRequest       = "InvalidRequest"
	ReasonDisallowedUsages     = "DisallowedUsages"
	ReasonDisallowedSAN        = "DisallowedSAN"
	ReasonNoIPSAN              = "NoIPSAN"
	ReasonForbiddenDNSName     = "ForbiddenDNSName"
	ReasonCARequested          = "CARequested"
	ReasonWeakKey              = "WeakKey"
	ReasonExpirationTooLong    = "ExpirationTooLong"
	ReasonInstanceNotFound     = "InstanceNotFound"
	ReasonInstanceAmbiguous    = "InstanceAmbiguous"
	ReasonInvalidProviderID    = "InvalidProviderID"
	ReasonInstanceDeleted      = "InstanceDeleted"
	ReasonInstanceNameMismatch = "InstanceNameMismatch"
	ReasonIPNotOfInstance      = "IPNotOfInstance"
	ReasonDNSNameNotOfInstance = "DNSNameNotOfInstance"
	ReasonSARDenied            = "SubjectAccessReviewDenied"

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
