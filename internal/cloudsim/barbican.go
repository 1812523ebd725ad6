package cloudsim

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Barbican (key-manager v1), minimal: secrets and containers that Octavia's
// TERMINATED_HTTPS listeners reference. Objects are project-scoped and
// ACL-free (only the owning project, or admin, sees them); reader reads,
// member writes, as the services' new default policies do. Payloads are
// stored but never served: nothing here needs them.

const keyManagerPrefix = "/key-manager"

type barbicanState struct {
	secrets    *coll[kmSecret]
	containers *coll[kmContainer]
}

func newBarbicanState() *barbicanState {
	return &barbicanState{secrets: newColl[kmSecret](), containers: newColl[kmContainer]()}
}

type kmSecret struct {
	ID, ProjectID, CreatorID      string
	Name, SecretType, ContentType string
	Algorithm, Mode               string
	BitLength                     int
	Payload                       string
	Created                       time.Time
}

type kmContainer struct {
	ID, ProjectID, CreatorID string
	Name, Type               string
	SecretRefs               []kmSecretRef // secret IDs by name
	Created                  time.Time
}

type kmSecretRef struct{ Name, SecretID string }

func barbicanNotFound(what string) func(string) error {
	return func(string) error {
		return apiErr(http.StatusNotFound, "", "Not Found. Sorry but your %s is in another castle.", what)
	}
}

var (
	kmSecretRes = &resource[kmSecret]{service: ServiceKeyManager, one: "secret", many: "secrets", action: "secret",
		store: func(st *state) *coll[kmSecret] { return st.kms.secrets }, owner: func(x *kmSecret) string { return x.ProjectID },
		notFound: barbicanNotFound("secret")}
	kmContainerRes = &resource[kmContainer]{service: ServiceKeyManager, one: "container", many: "containers", action: "container",
		store: func(st *state) *coll[kmContainer] { return st.kms.containers }, owner: func(x *kmContainer) string { return x.ProjectID },
		notFound: barbicanNotFound("container")}
)

// barbicanError is Barbican's error body.
func barbicanError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]any{"code": code, "title": http.StatusText(code), "description": msg})
}

func (s *Sim) routesKeyManager(mux *http.ServeMux) {
	s.handle(mux, "GET "+keyManagerPrefix+"/{$}", op{service: ServiceKeyManager, name: "versions", anonymous: true}, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": map[string]any{"values": []any{map[string]any{
			"id": "v1", "status": "stable", "updated": "2015-04-28T00:00:00Z",
			"links": []any{link(baseURL(r)+keyManagerPrefix+"/v1/", "self")}}}}})
	})
	h := s.serviceRoutes(mux, ServiceKeyManager, keyManagerPrefix+"/v1", nil)
	h("POST /secrets", "secrets.create", s.createSecret)
	h("GET /secrets", "secrets.list", kmList(s, kmSecretRes, "secrets", secretView))
	h("GET /secrets/{id}", "secrets.get", kmSecretRes.with(s, "", func(w http.ResponseWriter, r *http.Request, _ *state, x *kmSecret) {
		writeJSON(w, http.StatusOK, secretView(r, x))
	}))
	h("DELETE /secrets/{id}", "secrets.delete", kmSecretRes.remove(s, func(st *state, x *kmSecret) error {
		st.kms.secrets.del(x.ID)
		return nil
	}))
	h("POST /containers", "containers.create", s.createContainer)
	h("GET /containers", "containers.list", kmList(s, kmContainerRes, "containers", containerView))
	h("GET /containers/{id}", "containers.get", kmContainerRes.with(s, "", func(w http.ResponseWriter, r *http.Request, _ *state, x *kmContainer) {
		writeJSON(w, http.StatusOK, containerView(r, x))
	}))
	h("DELETE /containers/{id}", "containers.delete", kmContainerRes.remove(s, func(st *state, x *kmContainer) error {
		st.kms.containers.del(x.ID)
		return nil
	}))
}

func kmRef(r *http.Request, kind, id string) string {
	return baseURL(r) + keyManagerPrefix + "/v1/" + kind + "/" + id
}

func kmTS(t time.Time) string { return fmtTime(t, isoMicros) }

func secretView(r *http.Request, x *kmSecret) map[string]any {
	var bits, alg, mode any
	if x.BitLength > 0 {
		bits = x.BitLength
	}
	if x.Algorithm != "" {
		alg = x.Algorithm
	}
	if x.Mode != "" {
		mode = x.Mode
	}
	ct := map[string]string{}
	if x.ContentType != "" {
		ct["default"] = x.ContentType
	}
	return map[string]any{
		"secret_ref": kmRef(r, "secrets", x.ID), "name": nullIfEmpty(x.Name), "secret_type": x.SecretType,
		"status": "ACTIVE", "created": kmTS(x.Created), "updated": kmTS(x.Created), "expiration": nil,
		"algorithm": alg, "bit_length": bits, "mode": mode, "content_types": ct, "creator_id": x.CreatorID,
	}
}

func containerView(r *http.Request, x *kmContainer) map[string]any {
	refs := []any{}
	for _, sr := range x.SecretRefs {
		refs = append(refs, map[string]any{"name": sr.Name, "secret_ref": kmRef(r, "secrets", sr.SecretID)})
	}
	return map[string]any{
		"container_ref": kmRef(r, "containers", x.ID), "name": nullIfEmpty(x.Name), "type": x.Type,
		"status": "ACTIVE", "created": kmTS(x.Created), "updated": kmTS(x.Created),
		"secret_refs": refs, "consumers": []any{}, "creator_id": x.CreatorID,
	}
}

// kmList answers a collection GET as Barbican pages: limit (default 10)
// and offset, with "total" and next/previous links.
func kmList[T any](s *Sim, rs *resource[T], key string, view func(*http.Request, *T) map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit, offset := 10, 0
		for _, p := range []struct {
			name string
			dst  *int
		}{{"limit", &limit}, {"offset", &offset}} {
			if v := q.Get(p.name); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					barbicanError(w, http.StatusBadRequest, "Provided field value is not supported: "+p.name)
					return
				}
				*p.dst = n
			}
		}
		name := q.Get("name")
		s.mu.RLock()
		var items []map[string]any
		for _, x := range rs.store(s.state).all() {
			v := view(r, x)
			if rs.readable(r, s.state, x) && (name == "" || v["name"] == name) {
				items = append(items, v)
			}
		}
		s.mu.RUnlock()
		total := len(items)
		page := items[min(offset, total):min(offset+limit, total)]
		body := map[string]any{key: append([]map[string]any{}, page...), "total": total}
		u := baseURL(r) + keyManagerPrefix + "/v1/" + key
		if offset+limit < total {
			body["next"] = u + "?" + url.Values{"limit": {strconv.Itoa(limit)}, "offset": {strconv.Itoa(offset + limit)}}.Encode()
		}
		if offset > 0 {
			body["previous"] = u + "?" + url.Values{"limit": {strconv.Itoa(limit)}, "offset": {strconv.Itoa(max(offset-limit, 0))}}.Encode()
		}
		writeJSON(w, http.StatusOK, body)
	}
}

var secretTypes = map[string]bool{"symmetric": true, "public": true, "private": true, "passphrase": true, "certificate": true, "opaque": true}

func creatorOf(r *http.Request) string {
	if t := tokenFrom(r); t != nil && t.User != nil {
		return t.User.ID
	}
	return ""
}

func (s *Sim) createSecret(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Name, Payload, Algorithm, Mode string
		SecretType                     string `json:"secret_type"`
		ContentType                    string `json:"payload_content_type"`
		Encoding                       string `json:"payload_content_encoding"`
		BitLength                      int    `json:"bit_length"`
		Expiration                     string `json:"expiration"`
	}
	if err := decodeBody(r, &b); err != nil {
		barbicanError(w, http.StatusBadRequest, "Provided object does not match schema 'Secret': "+err.Error())
		return
	}
	if b.SecretType == "" {
		b.SecretType = "opaque"
	}
	switch {
	case !secretTypes[b.SecretType]:
		barbicanError(w, http.StatusBadRequest, "Provided object does not match schema 'Secret': '"+b.SecretType+"' is not one of the secret types")
		return
	case b.Payload != "" && b.ContentType == "":
		barbicanError(w, http.StatusBadRequest, "Provided object does not match schema 'Secret': If 'payload' is supplied, 'payload_content_type' must also be supplied.")
		return
	case b.Encoding != "" && b.Encoding != "base64":
		barbicanError(w, http.StatusBadRequest, "Provided object does not match schema 'Secret': payload_content_encoding must be base64.")
		return
	}
	x := &kmSecret{ID: newID(), ProjectID: projectOf(r), CreatorID: creatorOf(r), Name: b.Name, SecretType: b.SecretType,
		ContentType: b.ContentType, Algorithm: b.Algorithm, Mode: b.Mode, BitLength: b.BitLength, Payload: b.Payload,
		Created: time.Now()}
	s.mu.Lock()
	s.state.kms.secrets.add(x.ID, x)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"secret_ref": kmRef(r, "secrets", x.ID)})
}

var containerTypes = map[string]bool{"generic": true, "rsa": true, "certificate": true}

func (s *Sim) createContainer(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Name, Type string
		SecretRefs []struct {
			Name      string `json:"name"`
			SecretRef string `json:"secret_ref"`
		} `json:"secret_refs"`
	}
	if err := decodeBody(r, &b); err != nil {
		barbicanError(w, http.StatusBadRequest, "Provided object does not match schema 'Container': "+err.Error())
		return
	}
	if !containerTypes[b.Type] {
		barbicanError(w, http.StatusBadRequest, "Provided object does not match schema 'Container': '"+b.Type+"' is not one of ['generic', 'rsa', 'certificate']")
		return
	}
	x := &kmContainer{ID: newID(), ProjectID: projectOf(r), CreatorID: creatorOf(r), Name: b.Name, Type: b.Type, Created: time.Now()}
	names := map[string]bool{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sr := range b.SecretRefs {
		id := refID(sr.SecretRef, "secrets")
		sec, ok := s.state.kms.secrets.get(id)
		if id == "" || !ok || !kmSecretRes.readable(r, s.state, sec) {
			barbicanError(w, http.StatusNotFound, "Secret provided for '"+sr.Name+"' doesn't exist.")
			return
		}
		names[sr.Name] = true
		x.SecretRefs = append(x.SecretRefs, kmSecretRef{Name: sr.Name, SecretID: id})
	}
	if b.Type == "certificate" && !names["certificate"] {
		barbicanError(w, http.StatusBadRequest, "Provided object does not match schema 'Container': 'certificate' is a required secret reference name for a certificate container")
		return
	}
	s.state.kms.containers.add(x.ID, x)
	writeJSON(w, http.StatusCreated, map[string]any{"container_ref": kmRef(r, "containers", x.ID)})
}

// refID is the UUID at the end of a Barbican reference of kind
// ("secrets" or "containers"), "" when ref is not one.
func refID(ref, kind string) string {
	u, err := url.Parse(ref)
	if err != nil {
		return ""
	}
	parts := strings.Split(strings.TrimSuffix(u.Path, "/"), "/")
	if len(parts) < 2 || parts[len(parts)-2] != kind {
		return ""
	}
	return parts[len(parts)-1]
}

// tlsContainer checks, as Octavia does through Barbican with the caller's
// project, that ref names a certificate container (or a secret) that
// project can read: Octavia answers 400 otherwise.
func (st *state) tlsContainer(projectID, ref string) error {
	bad := octFail(http.StatusBadRequest, "Could not retrieve certificate: ['%s']", ref)
	if id := refID(ref, "containers"); id != "" {
		c, ok := st.kms.containers.get(id)
		if !ok || c.ProjectID != projectID || c.Type != "certificate" {
			return bad
		}
		return nil
	}
	if id := refID(ref, "secrets"); id != "" {
		if x, ok := st.kms.secrets.get(id); ok && x.ProjectID == projectID {
			return nil
		}
	}
	return bad
}
