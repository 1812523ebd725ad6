package cloudsim

import (
	"crypto/sha512"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Glance (image v2), read-only: the images servers boot from, so that
// Nova's server views and clients that resolve image names (the CLI's
// `server list --long`) find them. A cloud always has an image service.

type image struct {
	ID, Name, ProjectID, Visibility string
	DiskFormat, ContainerFormat     string
	Size                            int64
	MinDisk, MinRAM                 int
	Created                         time.Time
}

var imageRes = &resource[image]{service: ServiceImage, one: "image", many: "images", action: "image",
	store: func(st *state) *coll[image] { return st.images }, owner: func(im *image) string { return im.ProjectID },
	public: func(_ *state, im *image) bool { return im.Visibility == "public" || im.Visibility == "community" },
	view:   func(_ *Sim, im *image) map[string]any { return imageView(im) },
	notFound: func(id string) error {
		return apiErr(http.StatusNotFound, "", "No image found with ID %s", id)
	}}

func (s *Sim) routesImage(mux *http.ServeMux) {
	versions := func(w http.ResponseWriter, r *http.Request) {
		var vs []any
		for _, v := range []string{"v2.17", "v2.16", "v2.15", "v2.9", "v2.0"} {
			status := "SUPPORTED"
			if v == "v2.17" {
				status = "CURRENT"
			}
			vs = append(vs, map[string]any{"id": v, "status": status, "links": []any{link(baseURL(r)+imagePrefix+"/v2/", "self")}})
		}
		writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": vs})
	}
	for _, p := range []string{imagePrefix, imagePrefix + "/{$}"} {
		s.handle(mux, "GET "+p, op{service: ServiceImage, name: "versions", anonymous: true}, versions)
	}
	h := s.serviceRoutes(mux, ServiceImage, imagePrefix+"/v2", nil)
	h("GET /images", "images.list", s.listImages)
	h("GET /images/{id}", "images.get", imageRes.with(s, "", func(w http.ResponseWriter, _ *http.Request, _ *state, im *image) {
		writeJSON(w, http.StatusOK, imageView(im))
	}))
}

func imageView(im *image) map[string]any {
	sum := sha512.Sum512([]byte(im.ID))
	ts := fmtTime(im.Created, isoSeconds)
	return map[string]any{
		"id": im.ID, "name": im.Name, "status": "active", "visibility": im.Visibility, "owner": im.ProjectID,
		"protected": false, "os_hidden": false, "disk_format": im.DiskFormat, "container_format": im.ContainerFormat,
		"size": im.Size, "virtual_size": nil, "min_disk": im.MinDisk, "min_ram": im.MinRAM,
		"checksum": hex.EncodeToString(sum[:16]), "os_hash_algo": "sha512", "os_hash_value": hex.EncodeToString(sum[:]),
		"tags": []string{}, "created_at": ts, "updated_at": ts,
		"self": "/v2/images/" + im.ID, "file": "/v2/images/" + im.ID + "/file", "schema": "/v2/schemas/image",
	}
}

// listImages pages as Glance does: limit and marker, and a relative
// "next" link while more remain; name, status and visibility filter.
func (s *Sim) listImages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 25
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			glanceError(w, http.StatusBadRequest, "limit param must be an integer")
			return
		}
		limit = n
	}
	s.mu.RLock()
	views := imageRes.views(s, r, s.state.images.all())
	_, markerOK := s.state.images.get(q.Get("marker"))
	s.mu.RUnlock()
	if m := q.Get("marker"); m != "" && !markerOK {
		glanceError(w, http.StatusBadRequest, "marker "+m+" could not be found.")
		return
	}
	out := []any{}
	started := q.Get("marker") == ""
	last, more := "", false
	for _, v := range views {
		if !started {
			started = v["id"] == q.Get("marker")
			continue
		}
		if !matchImage(v, q) {
			continue
		}
		if len(out) == limit {
			more = true
			break
		}
		out = append(out, v)
		last, _ = v["id"].(string)
	}
	body := map[string]any{"images": out, "first": "/v2/images", "schema": "/v2/schemas/images"}
	if more {
		nq := url.Values{}
		for k, v := range q {
			nq[k] = v
		}
		nq.Set("marker", last)
		body["next"] = "/v2/images?" + nq.Encode()
	}
	writeJSON(w, http.StatusOK, body)
}

func matchImage(v map[string]any, q url.Values) bool {
	for _, k := range []string{"name", "status", "visibility", "id"} {
		if want := q.Get(k); want != "" && v[k] != want {
			return false
		}
	}
	return true
}
