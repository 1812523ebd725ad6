package openstack

import (
	"errors"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
)

var (
	// ErrNotFound means the cloud answered definitively that the resource
	// does not exist. Only this error may lead to deleting anything.
	ErrNotFound = errors.New("not found in the cloud")
	// ErrConflict means a compare-and-swap update lost: the resource
	// changed since it was read (Neutron's 412 on If-Match:
	// revision_number). Read it again and retry.
	ErrConflict = errors.New("changed concurrently (revision_number mismatch)")
	// ErrAmbiguous means a lookup by name matched more than one server.
	ErrAmbiguous = errors.New("several servers match")
)

// IsNotFound reports whether err is a definitive "does not exist".
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// ErrInvalidProviderID means a Node's providerID is not one of ours.
var ErrInvalidProviderID = errors.New("invalid OpenStack providerID")

// ErrCredentialsRefused means new credentials cannot be used as they are:
// Keystone refused them (401 or 403), or they need a restart (another
// auth-url, region, endpoint type or project). Asking again with the same
// credentials gets the same answer until someone changes something; any
// other failure of a re-authentication may go away by itself.
var ErrCredentialsRefused = errors.New("credentials refused")

// IsBusy reports whether the cloud refused a change with 409 Conflict:
// Octavia's load balancer is immutable while PENDING_*, or Neutron's
// resource is in use. The same request may succeed later; nothing changed.
func IsBusy(err error) bool { return gophercloud.ResponseCodeIs(err, http.StatusConflict) }

// IsInvalid reports whether the cloud refused a request as invalid (400
// Bad Request): asking again unchanged gets the same answer.
func IsInvalid(err error) bool { return gophercloud.ResponseCodeIs(err, http.StatusBadRequest) }

// ErrNoTrunkExtension means Neutron answered 404 on the trunk collection:
// the trunk service plugin is not loaded, so no server has subports. Only
// that answer means it; any other failure of a trunk listing is an error.
var ErrNoTrunkExtension = errors.New("neutron has no trunk extension")

// ErrNoCatalog: Clients without an authenticated provider (built by hand
// with a Compute only) have no service catalog, so every other service is
// missing from them, as from a cloud that does not offer it.
var ErrNoCatalog = errors.New("no service catalog (no authenticated provider client)")
