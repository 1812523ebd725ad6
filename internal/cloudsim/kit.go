package cloudsim

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// The resource kit. Every OpenStack collection the simulator serves has the
// same skeleton: a store (coll, with tombstones and O(1) markers), an owner
// project, a JSON view, and list/show/update/delete handlers that scope by
// project, check policy, filter, page, and answer in their service's error
// form. A resource is declared once as a resource[T]; its handlers come from
// here. Request counting, fault injection, token validation and the role
// check of every request happen in Sim.wrap, which every route goes through.
//
// Adding a resource: declare it (neutronResource, octaviaResource, or a
// resource literal as imageRes), then register rs.list, rs.show,
// rs.remove(s, del) and updateHandler(s, rs, apply) on the service's
// routeFunc; rs.list takes an optional candidates function for an index or
// a parent (portsByDevice, membersOfPool). Adding a field: extend T, its
// view and its request body (optional fields as pointers, copied with
// setIf). Adding a handler that is not CRUD (an action, an If-Match check):
// rs.with(s, write, fn) or withBody(s, rs, write, fn) give it the object
// scoped, policy-checked and locked; failures are apiErr values answered
// by writeErr in the service's own error form.

// routeFunc registers fn for "METHOD /path" (relative to the service's
// prefix) under a counter/fault operation name.
type routeFunc func(pattern, name string, fn http.HandlerFunc)

// serviceRoutes returns the routeFunc of a service mounted at prefix; mw,
// when not nil, wraps every handler (Nova's microversion negotiation).
func (s *Sim) serviceRoutes(mux *http.ServeMux, service, prefix string, mw func(http.HandlerFunc) http.HandlerFunc) routeFunc {
	return func(pattern, name string, fn http.HandlerFunc) {
		method, path, _ := strings.Cut(pattern, " ")
		if mw != nil {
			fn = mw(fn)
		}
		s.handle(mux, method+" "+prefix+path, op{service: service, name: name}, fn)
	}
}

// apiError is a failure with the HTTP status and wording its service uses;
// typ is Neutron's error type ("PortNotFound"), ignored by other services.
type apiError struct {
	code int
	typ  string
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func apiErr(code int, typ, format string, args ...any) error {
	return &apiError{code: code, typ: typ, msg: fmt.Sprintf(format, args...)}
}

// writeErr answers err in service's error form: an apiError with its own
// status, any other error with the status statusFor maps it to.
func writeErr(w http.ResponseWriter, service string, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		serviceError(w, service, ae.code, ae.typ, ae.msg)
		return
	}
	serviceError(w, service, statusFor(err), "BadRequest", err.Error())
}

// resource declares one collection of a service.
type resource[T any] struct {
	service string
	one     string // JSON key of one object ("port")
	many    string // JSON key of the collection ("ports")
	// action names the policy target in 403s ("port" → "update_port").
	action string
	store  func(*state) *coll[T]
	owner  func(*T) string
	// public objects are readable (not writable) by every project: shared
	// and external networks and their subnets.
	public func(*state, *T) bool
	view   func(*Sim, *T) map[string]any
	// redact, when not nil, removes from a view what the caller's role may
	// not see (Neutron's admin-only port binding fields).
	redact   func(r *http.Request, v map[string]any)
	notFound func(id string) error
}

// render is the view of x as the caller may see it.
func (rs *resource[T]) render(s *Sim, r *http.Request, x *T) map[string]any {
	v := rs.view(s, x)
	if rs.redact != nil {
		rs.redact(r, v)
	}
	return v
}

// readable reports whether the caller may see x.
func (rs *resource[T]) readable(r *http.Request, st *state, x *T) bool {
	return canRead(r, rs.owner(x)) || (rs.public != nil && rs.public(st, x))
}

// lookup finds the object with id for a read, or for a write (write names
// the policy action, "" for reads). An object the caller cannot see is not
// found; one it can see but not change is a policy refusal, as the services
// answer.
func (rs *resource[T]) lookup(r *http.Request, st *state, id, write string) (*T, error) {
	x, ok := rs.store(st).get(id)
	if !ok || !rs.readable(r, st, x) {
		return nil, rs.notFound(id)
	}
	if write != "" && !canWrite(r, rs.owner(x)) {
		return nil, forbidden(rs.service, write+"_"+rs.action)
	}
	return x, nil
}

// find is lookup for handlers that answer other errors themselves: nil
// means it answered.
func (rs *resource[T]) find(w http.ResponseWriter, r *http.Request, st *state, id, write string) *T {
	x, err := rs.lookup(r, st, id, write)
	if err != nil {
		writeErr(w, rs.service, err)
	}
	return x
}

// views renders, in creation order, what the caller may see of items.
func (rs *resource[T]) views(s *Sim, r *http.Request, items []*T) []map[string]any {
	out := make([]map[string]any, 0, len(items))
	for _, x := range items {
		if rs.readable(r, s.state, x) {
			out = append(out, rs.render(s, r, x))
		}
	}
	return out
}

// list answers GET on the collection with the caller's objects, filtered
// and paged as Neutron and Octavia do. candidates, when not nil, narrows the
// scan (an index) or refuses the request (a missing parent).
func (rs *resource[T]) list(s *Sim, candidates func(*state, *http.Request) ([]*T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.RLock()
		items := rs.store(s.state).all
		var xs []*T
		var err error
		if candidates != nil {
			xs, err = candidates(s.state, r)
		} else {
			xs = items()
		}
		var views []map[string]any
		if err == nil {
			views = rs.views(s, r, xs)
		}
		s.mu.RUnlock()
		if err != nil {
			writeErr(w, rs.service, err)
			return
		}
		writeFilteredList(w, r, rs.service, rs.many, views)
	}
}

// show answers GET on one object.
func (rs *resource[T]) show(s *Sim) http.HandlerFunc {
	return rs.with(s, "", func(w http.ResponseWriter, r *http.Request, _ *state, x *T) {
		writeJSON(w, http.StatusOK, map[string]any{rs.one: rs.render(s, r, x)})
	})
}

// remove answers DELETE: del checks the service's rules (in use, owned by
// a device) and removes the object.
func (rs *resource[T]) remove(s *Sim, del func(st *state, x *T) error) http.HandlerFunc {
	return rs.with(s, "delete", func(w http.ResponseWriter, _ *http.Request, st *state, x *T) {
		if err := del(st, x); err != nil {
			writeErr(w, rs.service, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// with runs fn on the path's {id} object under the state lock (the write
// lock when write names a policy action, "" for reads); the 404 or 403 is
// answered here.
func (rs *resource[T]) with(s *Sim, write string, fn func(w http.ResponseWriter, r *http.Request, st *state, x *T)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if write == "" {
			s.mu.RLock()
			defer s.mu.RUnlock()
		} else {
			s.mu.Lock()
			defer s.mu.Unlock()
		}
		if x := rs.find(w, r, s.state, r.PathValue("id"), write); x != nil {
			fn(w, r, s.state, x)
		}
	}
}

// withBody is with for a change carrying a JSON body B, decoded before the
// lock is taken (a malformed body is the service's 400).
func withBody[T, B any](s *Sim, rs *resource[T], write string, fn func(w http.ResponseWriter, r *http.Request, st *state, x *T, b *B)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b B
		if err := decodeBody(r, &b); err != nil {
			writeErr(w, rs.service, apiErr(http.StatusBadRequest, "BadRequest", "%v", err))
			return
		}
		rs.with(s, write, func(w http.ResponseWriter, r *http.Request, st *state, x *T) { fn(w, r, st, x, &b) })(w, r)
	}
}

// updateHandler answers PUT with the updated view: apply changes x.
func updateHandler[T, B any](s *Sim, rs *resource[T], apply func(r *http.Request, st *state, x *T, b *B) error) http.HandlerFunc {
	return withBody(s, rs, "update", func(w http.ResponseWriter, r *http.Request, st *state, x *T, b *B) {
		if err := apply(r, st, x, b); err != nil {
			writeErr(w, rs.service, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{rs.one: rs.render(s, r, x)})
	})
}

// setIf copies *src into *dst when the request carried the field.
func setIf[V any](dst *V, src *V) {
	if src != nil {
		*dst = *src
	}
}
