package cloudsim

import (
	"net/http"
	"slices"
)

// Neutron's tag API (standard-attr-tag) on subnets: the floating subnet of
// a load balancer can be chosen by its tags. Changing tags is an update of
// the subnet (its owner, or an administrator for a shared network's).
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
		if t := r.PathValue("tag"); !slices.Contains(sn.Tags, t) {
			sn.Tags = append(sn.Tags, t)
		}
		w.WriteHeader(http.StatusCreated)
	}))
	h("DELETE /subnets/{id}/tags/{tag}", "subnets.tags.delete", subnetRes.with(s, "update", func(w http.ResponseWriter, r *http.Request, _ *state, sn *subnet) {
		i := slices.Index(sn.Tags, r.PathValue("tag"))
		if i < 0 {
			neutronError(w, http.StatusNotFound, "TagNotFound", "Tag %s could not be found.", r.PathValue("tag"))
			return
		}
		sn.Tags = slices.Delete(sn.Tags, i, i+1)
		w.WriteHeader(http.StatusNoContent)
	}))
}
