package cloudsim

import (
	"net/http"
	"slices"
	"strings"
)

// Octavia's listener rules for TLS termination and header insertion:
// TERMINATED_HTTPS needs a default certificate reference that resolves in
// Barbican for the listener's project, only it may carry one; only HTTP and
// TERMINATED_HTTPS listeners insert headers, and only the headers Octavia
// knows, the X-Forwarded-* ones with "true" or "false". A listener's
// default pool must speak a protocol its listener can feed.

var (
	forwardedHeaders  = []string{"X-Forwarded-For", "X-Forwarded-Port", "X-Forwarded-Proto", "X-Forwarded-Host"}
	clientCertHeaders = []string{"X-SSL-Client-Verify", "X-SSL-Client-Has-Cert", "X-SSL-Client-DN", "X-SSL-Client-CN",
		"X-SSL-Issuer", "X-SSL-Client-SHA1", "X-SSL-Client-Not-Before", "X-SSL-Client-Not-After"}
	// poolProtocolsOf lists the pool protocols each listener protocol accepts.
	poolProtocolsOf = map[string][]string{
		"HTTP":             {"HTTP", "PROXY", "PROXYV2"},
		"HTTPS":            {"HTTPS", "PROXY", "PROXYV2", "TCP"},
		"TERMINATED_HTTPS": {"HTTP", "PROXY", "PROXYV2"},
		"TCP":              {"TCP", "HTTP", "HTTPS", "PROXY", "PROXYV2"},
		"UDP":              {"UDP"},
		"SCTP":             {"SCTP"},
	}
)

// checkListenerTLS validates a listener's protocol, certificate reference
// and headers (on create, or an update's result).
func (st *state) checkListenerTLS(projectID, protocol, ref string, headers map[string]string) error {
	switch {
	case protocol == "TERMINATED_HTTPS" && ref == "":
		return octFail(http.StatusBadRequest, "Validation failure: An SNI or default certificate container reference must be provided for TERMINATED_HTTPS listeners.")
	case protocol != "TERMINATED_HTTPS" && ref != "":
		return octFail(http.StatusBadRequest, "Validation failure: Certificate container references are only allowed on TERMINATED_HTTPS protocol listeners.")
	case ref != "":
		if err := st.tlsContainer(projectID, ref); err != nil {
			return err
		}
	}
	if len(headers) == 0 {
		return nil
	}
	if protocol != "HTTP" && protocol != "TERMINATED_HTTPS" {
		return octFail(http.StatusBadRequest, "Validation failure: insert-headers is not a valid option for a %s listener.", protocol)
	}
	for k, v := range headers {
		switch {
		case slices.Contains(forwardedHeaders, k):
			if l := strings.ToLower(v); l != "true" && l != "false" {
				return octFail(http.StatusBadRequest, "Invalid input for field/attribute insert_headers. Value: '%s'. %s must be true or false.", v, k)
			}
		case slices.Contains(clientCertHeaders, k):
			if protocol != "TERMINATED_HTTPS" {
				return octFail(http.StatusBadRequest, "Validation failure: %s is only supported on TERMINATED_HTTPS listeners.", k)
			}
		default:
			return octFail(http.StatusBadRequest, "Invalid input for field/attribute insert_headers. Value: '%s'. Supported headers: %s.", k, strings.Join(append(slices.Clone(forwardedHeaders), clientCertHeaders...), ", "))
		}
	}
	return nil
}

// checkPoolProtocol refuses a default pool its listener cannot feed.
func checkPoolProtocol(listenerProtocol, poolProtocol string) error {
	ok, known := poolProtocolsOf[listenerProtocol]
	if known && !slices.Contains(ok, poolProtocol) {
		return octFail(http.StatusBadRequest, "Validation failure: The pool protocol '%s' is invalid while the listener protocol is '%s'.", poolProtocol, listenerProtocol)
	}
	return nil
}
