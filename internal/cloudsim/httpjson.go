package cloudsim

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Each OpenStack service has its own error body; clients (and operators
// reading logs) recognise them, so the simulator reproduces each one.

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if v == nil || code == http.StatusNoContent {
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

// novaError writes Nova's {"itemNotFound": {"code": 404, "message": ...}} form.
func novaError(w http.ResponseWriter, code int, format string, args ...any) {
	kind := map[int]string{
		400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound",
		409: "conflictingRequest", 413: "overLimit", 429: "overLimit", 500: "computeFault", 503: "serviceUnavailable",
	}[code]
	if kind == "" {
		kind = "computeFault"
	}
	writeJSON(w, code, map[string]any{kind: map[string]any{"code": code, "message": fmt.Sprintf(format, args...)}})
}

// neutronError writes Neutron's {"NeutronError": {"type","message","detail"}} form.
func neutronError(w http.ResponseWriter, code int, typ, format string, args ...any) {
	writeJSON(w, code, map[string]any{"NeutronError": map[string]any{
		"type": typ, "message": fmt.Sprintf(format, args...), "detail": "",
	}})
}

// octaviaError writes Octavia's (WSME) {"faultcode","faultstring","debuginfo"} form.
func octaviaError(w http.ResponseWriter, code int, format string, args ...any) {
	fc := "Client"
	if code >= 500 {
		fc = "Server"
	}
	writeJSON(w, code, map[string]any{"faultcode": fc, "faultstring": fmt.Sprintf(format, args...), "debuginfo": nil})
}

// glanceError writes Glance's (webob) HTML error page.
func glanceError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=UTF-8")
	w.WriteHeader(code)
	status := fmt.Sprintf("%d %s", code, http.StatusText(code))
	_, _ = fmt.Fprintf(w, "<html>\n <head>\n  <title>%s</title>\n </head>\n <body>\n  <h1>%s</h1>\n  %s<br /><br />\n\n\n\n </body>\n</html>", status, status, msg)
}

// keystoneError writes Keystone's {"error": {"code","message","title"}} form.
func keystoneError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, map[string]any{"error": map[string]any{
		"code": code, "message": fmt.Sprintf(format, args...), "title": http.StatusText(code),
	}})
}

// serviceError writes an error in the body format of service.
// typ is Neutron's error type; empty means the status text ("NotFound").
func serviceError(w http.ResponseWriter, service string, code int, typ, msg string) {
	switch service {
	case ServiceCompute:
		novaError(w, code, "%s", msg)
	case ServiceNetwork:
		if typ == "" {
			typ = strings.ReplaceAll(http.StatusText(code), " ", "")
		}
		neutronError(w, code, typ, "%s", msg)
	case ServiceImage:
		glanceError(w, code, msg)
	case ServiceLoadBalancer:
		octaviaError(w, code, "%s", msg)
	case ServiceKeyManager:
		barbicanError(w, code, msg)
	default:
		keystoneError(w, code, "%s", msg)
	}
}

// writeAuthError answers a missing, bad or expired token the way
// keystonemiddleware does in front of every service.
func writeAuthError(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", fmt.Sprintf("Keystone uri=%q", baseURL(r)+"/v3"))
	keystoneError(w, http.StatusUnauthorized, "The request you have made requires authentication.")
}

// decodeBody decodes a JSON request body into v. Unknown fields are allowed:
// real services ignore (or reject per microversion) fields we do not model.
func decodeBody(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return errors.New("the request body is empty")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("malformed JSON body: %w", err)
	}
	return nil
}

// newID returns a random UUID (version 4), as every OpenStack service uses.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newHexID returns a 32-hex-digit ID, the form Keystone uses for projects and users.
func newHexID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Time formats of the services (they differ, and clients parse them strictly).
const (
	isoSeconds = "2006-01-02T15:04:05Z"        // Nova created/updated, Neutron
	isoMicros  = "2006-01-02T15:04:05.000000"  // Nova launched_at, Octavia created_at (without micros)
	keystoneTS = "2006-01-02T15:04:05.000000Z" // Keystone expires_at/issued_at
	octaviaTS  = "2006-01-02T15:04:05"
)

func fmtTime(t time.Time, layout string) string { return t.UTC().Format(layout) }

// link is an OpenStack {"href","rel"} link.
func link(href, rel string) map[string]any { return map[string]any{"href": href, "rel": rel} }

// jsonRaw defers decoding of a part of a body.
type jsonRaw = json.RawMessage

func unmarshal(b jsonRaw, v any) error { return json.Unmarshal(b, v) }
