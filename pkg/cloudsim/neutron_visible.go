package cloudsim

import "net/http"

// Neutron's list and show answer only what the caller's project may see;
// every resource kind shares these two forms.

// visibleViews renders, in order, the items the caller's project may see.
func visibleViews[T any](r *http.Request, items []*T, owner func(*T) string, view func(*T) map[string]any) []map[string]any {
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if visibleTo(r, owner(it)) {
			out = append(out, view(it))
		}
	}
	return out
}

// findVisible returns the item named by the path's {id} when the caller may
// see it; otherwise it answers Neutron's 404 with fault and notFound (a
// format taking the ID) and returns nil.
func findVisible[T any](w http.ResponseWriter, r *http.Request, c *coll[T], owner func(*T) string, fault, notFound string) *T {
	id := r.PathValue("id")
	v, ok := c.get(id)
	if !ok || !visibleTo(r, owner(v)) {
		neutronError(w, http.StatusNotFound, fault, notFound, id)
		return nil
	}
	return v
}
