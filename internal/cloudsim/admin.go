package cloudsim

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// The admin HTTP API mirrors the Go API for processes that cannot call it:
// the e2e lab, `make demo`, and operators poking at a running simulator.
// It is unauthenticated on purpose: the simulator is a local test tool.
// Bodies are JSON; errors are {"error": "..."} with 400/404/409.
//
//	GET    /admin/servers[?name=N]            every server (Server as JSON)
//	POST   /admin/servers                     create from a ServerSpec → 201
//	GET    /admin/servers/{id}
//	DELETE /admin/servers/{id}                → 204; Nova then answers 404
//	POST   /admin/servers/{id}/shutoff|start  → SHUTOFF / ACTIVE
//	PUT    /admin/servers/{id}/status         {"status": "ERROR"}
//	POST   /admin/servers/{id}/floating-ips   {"network": "public"} → {"ip": ...}
//	DELETE /admin/servers/{id}/floating-ips/{ip}
//	POST   /admin/servers/{id}/nics           {"network": "n", "fixedIP": "..."}
//	DELETE /admin/servers/{id}/nics/{network}
//	GET|POST|DELETE /admin/faults             a FaultRule with durations as "20ms"
//	POST   /admin/revoke-tokens
//	PUT    /admin/latency                     {"latency": "20ms"}
//	GET|DELETE /admin/calls                   per-operation call counters

func (s *Sim) routesAdmin(mux *http.ServeMux) {
	mux.HandleFunc("GET /admin/calls", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"calls": s.Calls()})
	})
	mux.HandleFunc("DELETE /admin/calls", func(w http.ResponseWriter, r *http.Request) {
		s.ResetCalls()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /admin/servers", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		out := []Server{}
		for _, sv := range s.Servers() {
			if name == "" || sv.Name == name {
				out = append(out, sv)
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"servers": out})
	})
	mux.HandleFunc("POST /admin/servers", func(w http.ResponseWriter, r *http.Request) {
		var spec ServerSpec
		if err := decodeBody(r, &spec); err != nil {
			adminError(w, fmt.Errorf("%w: %w", err, ErrInvalid))
			return
		}
		sv, err := s.CreateServer(spec)
		adminReply(w, http.StatusCreated, sv, err)
	})
	mux.HandleFunc("GET /admin/servers/{id}", func(w http.ResponseWriter, r *http.Request) {
		sv, ok := s.GetServer(r.PathValue("id"))
		if !ok {
			adminError(w, fmt.Errorf("server %s: %w", r.PathValue("id"), ErrNotFound))
			return
		}
		writeJSON(w, http.StatusOK, sv)
	})
	mux.HandleFunc("DELETE /admin/servers/{id}", func(w http.ResponseWriter, r *http.Request) {
		adminReply(w, http.StatusNoContent, nil, s.DeleteServer(r.PathValue("id")))
	})
	status := func(st string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if st == "" {
				var b struct {
					Status string `json:"status"`
				}
				if err := decodeBody(r, &b); err != nil {
					adminError(w, fmt.Errorf("%w: %w", err, ErrInvalid))
					return
				}
				st = b.Status
			}
			err := s.SetServerStatus(r.PathValue("id"), st)
			sv, _ := s.GetServer(r.PathValue("id"))
			adminReply(w, http.StatusOK, sv, err)
		}
	}
	mux.HandleFunc("POST /admin/servers/{id}/shutoff", status("SHUTOFF"))
	mux.HandleFunc("POST /admin/servers/{id}/start", status("ACTIVE"))
	mux.HandleFunc("PUT /admin/servers/{id}/status", func(w http.ResponseWriter, r *http.Request) { status("")(w, r) })
	mux.HandleFunc("POST /admin/servers/{id}/floating-ips", func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Network string `json:"network"`
		}
		_ = decodeBody(r, &b) // an empty body means the first external network
		ip, err := s.AttachFloatingIP(r.PathValue("id"), b.Network)
		adminReply(w, http.StatusCreated, map[string]string{"ip": ip}, err)
	})
	mux.HandleFunc("DELETE /admin/servers/{id}/floating-ips/{ip}", func(w http.ResponseWriter, r *http.Request) {
		adminReply(w, http.StatusNoContent, nil, s.DetachFloatingIP(r.PathValue("id"), r.PathValue("ip")))
	})
	mux.HandleFunc("POST /admin/servers/{id}/nics", func(w http.ResponseWriter, r *http.Request) {
		var b NICSpec
		if err := decodeBody(r, &b); err != nil {
			adminError(w, fmt.Errorf("%w: %w", err, ErrInvalid))
			return
		}
		sv, err := s.AddNIC(r.PathValue("id"), b.Network, b.FixedIP)
		adminReply(w, http.StatusCreated, sv, err)
	})
	mux.HandleFunc("DELETE /admin/servers/{id}/nics/{network}", func(w http.ResponseWriter, r *http.Request) {
		adminReply(w, http.StatusNoContent, nil, s.RemoveNIC(r.PathValue("id"), r.PathValue("network")))
	})
	mux.HandleFunc("GET /admin/faults", func(w http.ResponseWriter, r *http.Request) {
		out := []adminFault{}
		for _, f := range s.Faults() {
			out = append(out, toAdminFault(f))
		}
		writeJSON(w, http.StatusOK, map[string]any{"faults": out})
	})
	mux.HandleFunc("POST /admin/faults", func(w http.ResponseWriter, r *http.Request) {
		var b adminFault
		if err := decodeBody(r, &b); err != nil {
			adminError(w, fmt.Errorf("%w: %w", err, ErrInvalid))
			return
		}
		rule, err := b.rule()
		if err == nil {
			err = s.SetFault(rule)
		}
		adminReply(w, http.StatusCreated, b, err)
	})
	mux.HandleFunc("DELETE /admin/faults", func(w http.ResponseWriter, r *http.Request) {
		s.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /admin/revoke-tokens", func(w http.ResponseWriter, r *http.Request) {
		s.RevokeTokens()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("PUT /admin/latency", func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Latency string `json:"latency"`
		}
		if err := decodeBody(r, &b); err != nil {
			adminError(w, fmt.Errorf("%w: %w", err, ErrInvalid))
			return
		}
		d, err := time.ParseDuration(b.Latency)
		if err != nil {
			adminError(w, fmt.Errorf("latency %q: %w: %w", b.Latency, err, ErrInvalid))
			return
		}
		s.SetLatency(d)
		writeJSON(w, http.StatusOK, b)
	})
}

// adminFault is FaultRule with durations written as Go duration strings.
type adminFault struct {
	Service     string  `json:"service"`
	Operation   string  `json:"operation,omitempty"`
	Status      int     `json:"status,omitempty"`
	RetryAfter  string  `json:"retryAfter,omitempty"`
	ErrorRate   float64 `json:"errorRate,omitempty"`
	Latency     string  `json:"latency,omitempty"`
	Hang        bool    `json:"hang,omitempty"`
	HangFor     string  `json:"hangFor,omitempty"`
	Times       int     `json:"times,omitempty"`
	NoRequestID bool    `json:"noRequestID,omitempty"`
}

func (a adminFault) rule() (FaultRule, error) {
	f := FaultRule{Service: a.Service, Operation: a.Operation, Status: a.Status, ErrorRate: a.ErrorRate, Hang: a.Hang, Times: a.Times, NoRequestID: a.NoRequestID}
	var err error
	if a.RetryAfter != "" {
		if f.RetryAfter, err = time.ParseDuration(a.RetryAfter); err != nil {
			return f, fmt.Errorf("retryAfter: %w: %w", err, ErrInvalid)
		}
	}
	if a.Latency != "" {
		if f.Latency, err = time.ParseDuration(a.Latency); err != nil {
			return f, fmt.Errorf("latency: %w: %w", err, ErrInvalid)
		}
	}
	if a.HangFor != "" {
		if f.HangFor, err = time.ParseDuration(a.HangFor); err != nil {
			return f, fmt.Errorf("hangFor: %w: %w", err, ErrInvalid)
		}
	}
	return f, nil
}

func toAdminFault(f FaultRule) adminFault {
	a := adminFault{Service: f.Service, Operation: f.Operation, Status: f.Status, ErrorRate: f.ErrorRate, Hang: f.Hang, Times: f.Times, NoRequestID: f.NoRequestID}
	if f.RetryAfter > 0 {
		a.RetryAfter = f.RetryAfter.String()
	}
	if f.Latency > 0 {
		a.Latency = f.Latency.String()
	}
	if f.HangFor > 0 {
		a.HangFor = f.HangFor.String()
	}
	return a
}

func adminReply(w http.ResponseWriter, code int, v any, err error) {
	if err != nil {
		adminError(w, err)
		return
	}
	if code == http.StatusNoContent {
		w.WriteHeader(code)
		return
	}
	writeJSON(w, code, v)
}

func adminError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, ErrConflict), errors.Is(err, ErrExhausted):
		code = http.StatusConflict
	case errors.Is(err, ErrInvalid):
		code = http.StatusBadRequest
	}
	writeJSON(w, code, map[string]string{"error": err.Error()})
}

// Servers returns every server, oldest first.
func (s *Sim) Servers() []Server {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Server, 0, s.state.servers.len())
	fips := s.state.fipIndex()
	for _, sv := range s.state.servers.all() {
		out = append(out, s.state.snapshotWith(sv, fips))
	}
	return out
}
