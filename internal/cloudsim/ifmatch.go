package cloudsim

import (
	"net/http"
	"strconv"
	"strings"
)

// ifMatchFails enforces Neutron's compare-and-swap on updates
// (standard-attr-revisions): a request carrying
// `If-Match: revision_number=N` changes the resource only while its
// revision is N, and is refused with 412 otherwise, so that a client doing
// read-modify-write never overwrites a change it has not seen. Other
// If-Match values are ignored, as Neutron does. It writes the error and
// reports true when the request must stop.
func ifMatch(r *http.Request, current int) error {
	for _, h := range r.Header.Values("If-Match") {
		for _, part := range strings.Split(h, ",") {
			v, ok := strings.CutPrefix(strings.TrimSpace(part), "revision_number=")
			if !ok {
				continue
			}
			want, err := strconv.Atoi(v)
			if err != nil {
				return apiErr(http.StatusBadRequest, "InvalidInput", "Invalid input for operation: Revision number must be an integer, got %q.", v)
			}
			if want != current {
				return apiErr(http.StatusPreconditionFailed, "RevisionNumberConstraintFailed",
					"Constrained to %d, but current revision is %d", want, current)
			}
		}
	}
	return nil
}
