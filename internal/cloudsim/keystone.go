package cloudsim

import (
	"net/http"
	"slices"
	"time"
)

// Keystone v3: just enough identity for OpenStack clients to authenticate
// (password, application credential, token), get a scoped token with a
// catalog, validate it, and be refused once it expires or is revoked.

type token struct {
	ID      string
	User    *user
	Project *project
	AppCred *appCred
	Roles   []string // effective (implied roles expanded); none when unscoped
	Methods []string
	Issued  time.Time
	Expires time.Time
	AuditID string
}

// checkToken validates a token ID; expired tokens are removed.
func (s *Sim) checkToken(id string) (*token, bool) {
	if id == "" {
		return nil, false
	}
	s.mu.RLock()
	t, ok := s.state.tokens[id]
	s.mu.RUnlock()
	if !ok {
		return nil, false
	}
	if time.Now().After(t.Expires) {
		s.mu.Lock()
		delete(s.state.tokens, id)
		s.mu.Unlock()
		return nil, false
	}
	return t, true
}

func (s *Sim) routesIdentity(mux *http.ServeMux) {
	anon := func(name string) op { return op{service: ServiceIdentity, name: name, anonymous: true} }
	s.handle(mux, "GET /{$}", anon("versions"), s.identityVersions)
	s.handle(mux, "GET /v3", anon("version"), s.identityVersion)
	s.handle(mux, "GET /v3/{$}", anon("version"), s.identityVersion)
	s.handle(mux, "POST /v3/auth/tokens", anon("tokens.create"), s.issueToken)
	s.handle(mux, "GET /v3/auth/tokens", op{service: ServiceIdentity, name: "tokens.get"}, s.validateToken)
	s.handle(mux, "HEAD /v3/auth/tokens", op{service: ServiceIdentity, name: "tokens.check"}, s.validateToken)
	s.handle(mux, "DELETE /v3/auth/tokens", op{service: ServiceIdentity, name: "tokens.delete"}, s.revokeToken)
	s.handle(mux, "GET /v3/auth/catalog", op{service: ServiceIdentity, name: "catalog.get"}, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"catalog": s.catalog(baseURL(r))})
	})
}

func identityVersionDoc(base string) map[string]any {
	return map[string]any{
		"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
		"links":       []any{link(base+"/v3/", "self")},
		"media-types": []any{map[string]any{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}},
	}
}

func (s *Sim) identityVersions(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": map[string]any{
		"values": []any{identityVersionDoc(baseURL(r))},
	}})
}

func (s *Sim) identityVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"version": identityVersionDoc(baseURL(r))})
}

type idRef struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Domain *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"domain"`
}

type authRequest struct {
	Auth struct {
		Identity struct {
			Methods  []string `json:"methods"`
			Password *struct {
				User struct {
					idRef
					Password string `json:"password"`
				} `json:"user"`
			} `json:"password"`
			AppCred *struct {
				ID     string `json:"id"`
				Name   string `json:"name"`
				Secret string `json:"secret"`
				User   *idRef `json:"user"`
			} `json:"application_credential"`
			Token *struct {
				ID string `json:"id"`
			} `json:"token"`
		} `json:"identity"`
		Scope *struct {
			Project *idRef `json:"project"`
		} `json:"scope"`
	} `json:"auth"`
}

// findUser resolves a user by ID, or by name within a domain (ID or name).
func (st *state) findUser(ref idRef) *user {
	if ref.ID != "" {
		u, _ := st.users.get(ref.ID)
		return u
	}
	if ref.Domain == nil {
		return nil
	}
	d := st.findDomain(ref.Domain.ID, ref.Domain.Name)
	if d == nil {
		return nil
	}
	for _, u := range st.users.all() {
		if u.Name == ref.Name && u.DomainID == d.ID {
			return u
		}
	}
	return nil
}

func (st *state) findProject(ref idRef) *project {
	if ref.ID != "" {
		p, _ := st.projects.get(ref.ID)
		return p
	}
	if ref.Domain == nil {
		return nil
	}
	d := st.findDomain(ref.Domain.ID, ref.Domain.Name)
	if d == nil {
		return nil
	}
	for _, p := range st.projects.all() {
		if p.Name == ref.Name && p.DomainID == d.ID {
			return p
		}
	}
	return nil
}

func (s *Sim) issueToken(w http.ResponseWriter, r *http.Request) {
	var req authRequest
	if err := decodeBody(r, &req); err != nil {
		keystoneError(w, http.StatusBadRequest, "%v", err)
		return
	}
	id := req.Auth.Identity
	now := time.Now().UTC()
	t := &token{ID: "gAAAAA" + newHexID() + newHexID(), Issued: now, Expires: now.Add(s.opts.TokenTTL),
		AuditID: newHexID()[:22], Methods: id.Methods}

	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state
	switch {
	case id.AppCred != nil:
		var ac *appCred
		if id.AppCred.ID != "" {
			ac, _ = st.appCreds.get(id.AppCred.ID)
		} else if id.AppCred.User != nil {
			if u := st.findUser(*id.AppCred.User); u != nil {
				for _, c := range st.appCreds.all() {
					if c.UserID == u.ID && c.Name == id.AppCred.Name {
						ac = c
					}
				}
			}
		}
		if ac == nil || ac.Secret != id.AppCred.Secret {
			keystoneError(w, http.StatusUnauthorized, "The request you have made requires authentication.")
			return
		}
		if req.Auth.Scope != nil {
			// The scope of an application credential is its own.
			keystoneError(w, http.StatusUnauthorized, "Error authenticating with application credential: Application credentials cannot request a scope.")
			return
		}
		t.AppCred, t.User = ac, st.users.byID[ac.UserID]
		t.Project, _ = st.projects.get(ac.ProjectID)
		t.Methods = []string{"application_credential"}
	case id.Password != nil:
		u := st.findUser(id.Password.User.idRef)
		if u == nil || u.Password != id.Password.User.Password {
			keystoneError(w, http.StatusUnauthorized, "The request you have made requires authentication.")
			return
		}
		t.User, t.Methods = u, []string{"password"}
	case id.Token != nil:
		old, ok := st.tokens[id.Token.ID]
		if !ok || now.After(old.Expires) {
			keystoneError(w, http.StatusNotFound, "Could not find token: %s.", id.Token.ID)
			return
		}
		if old.AppCred != nil {
			keystoneError(w, http.StatusForbidden, "You are not authorized to perform the requested action: using a token issued by an application credential to create another token.")
			return
		}
		t.User, t.Project, t.Expires, t.Methods = old.User, old.Project, old.Expires, []string{"token"}
	default:
		keystoneError(w, http.StatusUnauthorized, "Expecting to find a supported identity method in the request.")
		return
	}
	if t.AppCred == nil {
		switch {
		case req.Auth.Scope != nil && req.Auth.Scope.Project != nil:
			p := st.findProject(*req.Auth.Scope.Project)
			if p == nil || p.ID != t.User.ProjectID {
				keystoneError(w, http.StatusUnauthorized, "The request you have made requires authentication.")
				return
			}
			t.Project = p
		case t.Project == nil && t.User.ProjectID != "":
			// Keystone scopes to the default project when no scope is asked.
			t.Project, _ = st.projects.get(t.User.ProjectID)
		}
	}
	if t.Project != nil {
		roles := t.User.Roles
		if t.AppCred != nil {
			roles = t.AppCred.Roles
		}
		t.Roles = effectiveRoles(roles)
	}
	if len(st.tokens) > 50000 {
		for k, v := range st.tokens {
			if now.After(v.Expires) {
				delete(st.tokens, k)
			}
		}
	}
	st.tokens[t.ID] = t
	w.Header().Set("X-Subject-Token", t.ID)
	writeJSON(w, http.StatusCreated, map[string]any{"token": s.tokenBody(t, baseURL(r))})
}

func (s *Sim) tokenBody(t *token, base string) map[string]any {
	st := s.state
	d := st.domains[t.User.DomainID]
	body := map[string]any{
		"methods":    t.Methods,
		"user":       map[string]any{"id": t.User.ID, "name": t.User.Name, "domain": map[string]any{"id": d.ID, "name": d.Name}, "password_expires_at": nil},
		"audit_ids":  []string{t.AuditID},
		"issued_at":  fmtTime(t.Issued, keystoneTS),
		"expires_at": fmtTime(t.Expires, keystoneTS),
	}
	if t.Project != nil {
		pd := st.domains[t.Project.DomainID]
		body["project"] = map[string]any{"id": t.Project.ID, "name": t.Project.Name, "domain": map[string]any{"id": pd.ID, "name": pd.Name}}
		body["is_domain"] = false
		roles := []any{}
		for _, name := range t.Roles {
			roles = append(roles, map[string]any{"id": roleIDs[name], "name": name})
		}
		body["roles"] = roles
		body["catalog"] = s.catalog(base)
	}
	if t.AppCred != nil {
		body["application_credential"] = map[string]any{"id": t.AppCred.ID, "name": t.AppCred.Name, "restricted": true}
	}
	return body
}

// catalog lists every service at the address the client used, public and
// internal, in the simulator's region. The network and load-balancer URLs
// carry no version, as in most deployments: clients discover it.
func (s *Sim) catalog(base string) []any {
	svc := []struct{ typ, name, path string }{
		{ServiceIdentity, "keystone", "/v3"},
		{ServiceCompute, "nova", computePrefix + "/v2.1"},
		{ServiceNetwork, "neutron", networkPrefix},
		{ServiceLoadBalancer, "octavia", lbPrefix},
		{ServiceImage, "glance", imagePrefix},
		{ServiceKeyManager, "barbican", keyManagerPrefix},
	}
	var out []any
	for i, c := range svc {
		if slices.Contains(s.opts.WithoutServices, c.typ) {
			continue
		}
		var eps []any
		for j, iface := range []string{"public", "internal"} {
			eps = append(eps, map[string]any{
				"id": endpointID(i, j), "interface": iface, "region": s.region, "region_id": s.region, "url": base + c.path,
			})
		}
		out = append(out, map[string]any{"id": endpointID(i, 9), "type": c.typ, "name": c.name, "endpoints": eps})
	}
	return out
}

func endpointID(i, j int) string {
	const hex = "0123456789abcdef"
	b := []byte("5e1e0000000000000000000000000000")
	b[30], b[31] = hex[i%16], hex[j%16]
	return string(b)
}

func (s *Sim) validateToken(w http.ResponseWriter, r *http.Request) {
	t, ok := s.checkToken(r.Header.Get("X-Subject-Token"))
	if !ok {
		keystoneError(w, http.StatusNotFound, "Could not find token: %s.", r.Header.Get("X-Subject-Token"))
		return
	}
	w.Header().Set("X-Subject-Token", t.ID)
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	s.mu.RLock()
	body := s.tokenBody(t, baseURL(r))
	s.mu.RUnlock()
	writeJSON(w, http.StatusOK, map[string]any{"token": body})
}

func (s *Sim) revokeToken(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Subject-Token")
	s.mu.Lock()
	_, ok := s.state.tokens[id]
	delete(s.state.tokens, id)
	s.mu.Unlock()
	if !ok {
		keystoneError(w, http.StatusNotFound, "Could not find token: %s.", id)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
