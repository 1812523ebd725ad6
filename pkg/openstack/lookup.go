package openstack

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// ProviderIDScheme prefixes every OpenStack providerID.
const ProviderIDScheme = "openstack://"

// ProviderID is the providerID of a server: openstack:///<id>, or
// openstack://<region>/<id> when a region is configured (as upstream).
func ProviderID(region, serverID string) string {
	return ProviderIDScheme + region + "/" + serverID
}

// ParseProviderID splits a providerID into its region ("" for the
// openstack:///<id> form) and server ID. Anything else, including an ID
// that could not be a Nova server ID, is ErrInvalidProviderID.
func ParseProviderID(pid string) (region, serverID string, err error) {
	rest, ok := strings.CutPrefix(pid, ProviderIDScheme)
	if !ok {
		return "", "", fmt.Errorf("%w: %q does not start with %s", ErrInvalidProviderID, pid, ProviderIDScheme)
	}
	region, serverID, ok = strings.Cut(rest, "/")
	if !ok || serverID == "" {
		return "", "", fmt.Errorf("%w: %q has no server ID", ErrInvalidProviderID, pid)
	}
	if !validID(serverID) {
		return "", "", fmt.Errorf("%w: %q: server ID %q is not a Nova ID", ErrInvalidProviderID, pid, serverID)
	}
	if strings.ContainsAny(region, "/?#") {
		return "", "", fmt.Errorf("%w: %q: invalid region %q", ErrInvalidProviderID, pid, region)
	}
	return region, serverID, nil
}

// validID accepts what Nova IDs are made of (UUIDs), and nothing that could
// change the URL the ID is put into.
func validID(id string) bool {
	for _, r := range id {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return id != ""
}

// exactNameLookup is implemented by Computes that can find servers by exact
// name better than a regex listing (ServerCache).
type exactNameLookup interface {
	serversNamed(ctx context.Context, name string) ([]Server, error)
}

// ServerForNode finds the server behind a Node: by providerID when the Node
// has one, else by exact server name. A name that matches no server is
// ErrNotFound, several is ErrAmbiguous: it never guesses. The region of the
// providerID is not checked here; callers that know theirs compare it.
func ServerForNode(ctx context.Context, c Compute, providerID, nodeName string) (*Server, error) {
	if providerID != "" {
		_, id, err := ParseProviderID(providerID)
		if err != nil {
			return nil, err
		}
		return c.GetServer(ctx, id)
	}
	if nodeName == "" {
		return nil, fmt.Errorf("find server: node has neither providerID nor name")
	}
	var candidates []Server
	var err error
	if l, ok := c.(exactNameLookup); ok {
		candidates, err = l.serversNamed(ctx, nodeName)
	} else {
		candidates, err = listExactName(ctx, c, nodeName)
	}
	if err != nil {
		return nil, fmt.Errorf("find server named %q: %w", nodeName, err)
	}
	return pickOne(nodeName, candidates)
}

// listExactName asks Nova for the name, which it treats as a regex: anchor
// and escape it, then keep exact matches only (Nova's regex dialect is the
// database's, so do not trust it alone).
func listExactName(ctx context.Context, c Compute, name string) ([]Server, error) {
	list, err := c.ListServers(ctx, ListServersOpts{Name: "^" + regexp.QuoteMeta(name) + "$"})
	if err != nil {
		return nil, err
	}
	var out []Server
	for _, s := range list {
		if s.Name == name && !gone(s.Status) {
			out = append(out, s)
		}
	}
	return out, nil
}

func pickOne(name string, candidates []Server) (*Server, error) {
	switch len(candidates) {
	case 0:
		return nil, fmt.Errorf("find server named %q: %w", name, ErrNotFound)
	case 1:
		s := candidates[0]
		return &s, nil
	}
	ids := make([]string, 0, len(candidates))
	for _, s := range candidates {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return nil, fmt.Errorf("find server named %q: %w: %s", name, ErrAmbiguous, strings.Join(ids, ", "))
}

// StatusSoftDeleted is a server deleted with a reclaim delay: gone for the
// cluster, still listed by Nova until reclaimed.
const StatusSoftDeleted = "SOFT_DELETED"

// gone reports whether a listed server is deleted, so that a node re-created
// under the same name is not made ambiguous by its predecessor.
func gone(status string) bool { return status == StatusDeleted || status == StatusSoftDeleted }
