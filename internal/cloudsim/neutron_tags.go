package cloudsim

import (
	"net/http"
	"slices"
)

// Neutron's tag API (standard-attr-tag) on subnets: the floating subnet of
// a load balancer can be chosen by its tags. Changing tags is an update of
// the subnet (its owner, or an administrator for a shared network's).
// Security groups carry tags too: the CCM marks a Service's group with its
// cluster's UID.
func (s *Sim) routesSubnetTags(h routeFunc) {
	h("GET /subnets/{id}/tags", "subnets.tags.list", subnetRes.with(s, "", func(w http.ResponseWriter, _ *http.Request, _ *state, sn *subnet) {
		writeJSON(w, http.StatusOK, map[string]any{"tags": append([]string{}, sn.Tags...)})
	}))
	h("PUT /subnets/{id}/tags", "subnets.tags.replace", withBody(s, subnetRes, "update", func(w http.ResponseWriter, _ *http.Request, _ *state, sn *subnet, b *struct {
		Tags []string `json:"tags"`
	}) {
		sn.Tags = nil
		for _, t := range b.Tags {
			if !slices.Contains(sn.Tags, t) {
				sn.Tags = append(sn.Tags, t)
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"tags": append([]string{}, sn.Tags...)})
	}))
	h("PUT /subnets/{id}/tags/{tag}", "subnets.tags.add", subnetRes.with(s, "update", func(w http.ResponseWriter, r *http.Request, _ *state, sn *subnet) {
		addTag(w, r, &sn.Tags)
	}))
	h("DELETE /subnets/{id}/tags/{tag}", "subnets.tags.delete", subnetRes.with(s, "update", func(w http.ResponseWriter, r *http.Request, _ *state, sn *subnet) {
		deleteTag(w, r, &sn.Tags)
	}))
}

func (s *Sim) routesSecGroupTags(h routeFunc) {
	h("GET /security-groups/{id}/tags", "security-groups.tags.list", secGroupRes.with(s, "", func(w http.ResponseWriter, _ *http.Request, _ *state, g *secGroup) {
		writeJSON(w, http.StatusOK, map[string]any{"tags": append([]string{}, g.Tags...)})
	}))
	h("PUT /security-groups/{id}/tags/{tag}", "security-groups.tags.add", secGroupRes.with(s, "update", func(w http.ResponseWriter, r *http.Request, _ *state, g *secGroup) {
		addTag(w, r, &g.Tags)
	}))
	h("DELETE /security-groups/{id}/tags/{tag}", "security-groups.tags.delete", secGroupRes.with(s, "update", func(w http.ResponseWriter, r *http.Request, _ *state, g *secGroup) {
		deleteTag(w, r, &g.Tags)
	}))
}

// addTag is Neutron's PUT .../tags/{tag} on any resource: 201, idempotent.
func addTag(w http.ResponseWriter, r *http.Request, tags *[]string) {
	if t := r.PathValue("tag"); !slices.Contains(*tags, t) {
		*tags = append(*tags, t)
	}
	w.WriteHeader(http.StatusCreated)
}

// deleteTag is Neutron's DELETE .../tags/{tag}: 204, or 404 TagNotFound.
func deleteTag(w http.ResponseWriter, r *http.Request, tags *[]string) {
	i := slices.Index(*tags, r.PathValue("tag"))
	if i < 0 {
		neutronError(w, http.StatusNotFound, "TagNotFound", "Tag %s could not be found.", r.PathValue("tag"))
		return
	}
	*tags = slices.Delete(*tags, i, i+1)
	w.WriteHeader(http.StatusNoContent)
}
