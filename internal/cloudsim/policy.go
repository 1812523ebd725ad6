package cloudsim

import (
	"net/http"
	"slices"
	"strings"
)

// Roles and policy, after the services' default ("new defaults") policies:
// Keystone's admin implies member implies reader; Nova, Neutron and Glance
// read with reader and write with member; Octavia also accepts its own
// load-balancer_observer (read) and load-balancer_member (read and write).
// A project sees and changes its own resources; admin sees and changes
// every project's; shared and external networks are readable by all.

// Role names a seed may assign.
const (
	RoleAdmin      = "admin"
	RoleMember     = "member"
	RoleReader     = "reader"
	RoleLBMember   = "load-balancer_member"
	RoleLBObserver = "load-balancer_observer"
)

// roleIDs are stable so that tokens read the same across restarts.
var roleIDs = map[string]string{
	RoleAdmin:      "2a6c1b0d8e7f4c3b9a1d5e6f7a8b9c0d",
	RoleMember:     "9fe2ff9ee4384b1894a90878d3e92bab",
	RoleReader:     "f0b4a5d6c3e8410d9c0d2a8e5e1b7c3a",
	RoleLBMember:   "5c8e7d9f2a6b4e1c8d3f0a9b7e6c5d4a",
	RoleLBObserver: "7d1e2f3a4b5c4d6e8f9a0b1c2d3e4f5a",
}

// defaultRoles are a seed user's roles when it names none: what every
// token carried before roles were modelled.
var defaultRoles = []string{RoleMember, RoleLBMember}

// effectiveRoles expands Keystone's default implied roles.
func effectiveRoles(roles []string) []string {
	out := slices.Clone(roles)
	add := func(r string) {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	if slices.Contains(roles, RoleAdmin) {
		add(RoleMember)
	}
	if slices.Contains(out, RoleMember) {
		add(RoleReader)
	}
	return out
}

func hasRole(r *http.Request, roles ...string) bool {
	t := tokenFrom(r)
	if t == nil {
		return false
	}
	for _, x := range roles {
		if slices.Contains(t.Roles, x) {
			return true
		}
	}
	return false
}

func isAdmin(r *http.Request) bool { return hasRole(r, RoleAdmin) }

// canRead: own and unowned objects, or any with admin.
func canRead(r *http.Request, owner string) bool {
	return owner == "" || owner == projectOf(r) || isAdmin(r)
}

// canWrite: own objects, or any with admin.
func canWrite(r *http.Request, owner string) bool {
	return (owner != "" && owner == projectOf(r)) || isAdmin(r)
}

// serviceRoles are the roles that let a token read, and write, a service.
var serviceRoles = map[string]struct{ read, write []string }{
	ServiceCompute:    {read: []string{RoleReader}, write: []string{RoleMember}},
	ServiceNetwork:    {read: []string{RoleReader}, write: []string{RoleMember}},
	ServiceImage:      {read: []string{RoleReader}, write: []string{RoleMember}},
	ServiceKeyManager: {read: []string{RoleReader}, write: []string{RoleMember}},
	ServiceLoadBalancer: {
		read:  []string{RoleReader, RoleLBObserver, RoleLBMember},
		write: []string{RoleMember, RoleLBMember},
	},
}

// authorize is the role check of every authenticated request: false means
// it was refused with the service's 403.
func authorize(w http.ResponseWriter, r *http.Request, o op) bool {
	need, ok := serviceRoles[o.service]
	if !ok {
		return true
	}
	roles := need.read
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		roles = need.write
	}
	if hasRole(r, roles...) {
		return true
	}
	writeErr(w, o.service, forbidden(o.service, policyAction(o)))
	return false
}

// policyAction names an operation as the service's policy does:
// "servers:create" for Nova, "create_port" for Neutron.
func policyAction(o op) string {
	coll, verb, _ := strings.Cut(o.name, ".")
	switch o.service {
	case ServiceCompute:
		return strings.ReplaceAll(o.name, ".", ":")
	case ServiceNetwork:
		one := strings.ReplaceAll(strings.TrimSuffix(coll, "s"), "-", "_")
		switch verb {
		case "list":
			return "get_" + one
		case "get", "create", "update", "delete":
			return verb + "_" + one
		}
		return verb
	}
	return o.name
}

// forbidden is a policy refusal in the service's words.
func forbidden(service, action string) error {
	switch service {
	case ServiceCompute:
		return apiErr(http.StatusForbidden, "", "Policy doesn't allow os_compute_api:%s to be performed.", action)
	case ServiceNetwork:
		return apiErr(http.StatusForbidden, "PolicyNotAuthorized", "rule:%s is disallowed by policy", action)
	case ServiceImage:
		return apiErr(http.StatusForbidden, "", "You are not authorized to complete %s action.", action)
	default:
		return apiErr(http.StatusForbidden, "", "Policy does not allow this request to be performed.")
	}
}
