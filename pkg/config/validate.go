package config

import (
	"errors"
	"io/fs"
	"net/url"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Validate checks the Config as a whole and returns every problem at once
// (errors.Join of *FieldError, each matching ErrInvalid), or nil.
func (c *Config) Validate() error {
	file := c.Source
	if file == "" {
		file = "cloud config" // built in code rather than read
	}
	p := &problems{file: file}
	c.validateGlobal(p)
	c.validateMetadata(p)
	c.validateLoadBalancer(p)
	c.validateClasses(p)
	return p.err()
}

func (c *Config) validateGlobal(p *problems) {
	g := &c.Global
	bad := func(key, format string, args ...any) { p.add(0, "Global", key, format, args...) }

	if g.AuthURL == "" {
		bad("auth-url", "required")
	} else if u, err := url.Parse(g.AuthURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("auth-url", "must be an absolute http(s) URL, got %q", g.AuthURL)
	}

	appCred := g.ApplicationCredentialID != "" || g.ApplicationCredentialName != "" || g.ApplicationCredentialSecret != ""
	userNeeded := true
	switch {
	case g.Token != "":
		// The token stands for the user (resolve warns about a user's
		// name or password beside it). Upstream cannot start with the
		// combinations refused here: gophercloud refuses to renew a token
		// it is not asked to re-scope, and an application credential (in
		// gophercloud-utils) takes the scope away; with trust-id upstream
		// drops the token and logs in as the trustee.
		userNeeded = false
		if appCred {
			bad("token", "cannot be used with an application credential (application-credential-*): use one")
		}
		if g.TrustID != "" {
			bad("token", "cannot be used with trust-id: a trust is entered with trustee-id and trustee-password")
		}
		if !appCred && g.TenantID == "" && g.TenantName == "" && g.DomainID == "" && g.DomainName == "" {
			bad("token", "needs a scope to re-scope the token to: set tenant-id (or tenant-name), domain-id or domain-name")
		}
	case appCred:
		if g.ApplicationCredentialSecret == "" {
			bad("application-credential-secret", "required with an application credential")
		}
		if g.ApplicationCredentialID == "" && g.ApplicationCredentialName == "" {
			bad("application-credential-id", "required with application-credential-secret (or set application-credential-name and the user)")
		}
		// An application credential ID names it globally; a name is only
		// unique per user.
		userNeeded = g.ApplicationCredentialID == ""
	case g.Password == "":
		bad("password", "required (or use application-credential-id and application-credential-secret, or token)")
	}
	if userNeeded {
		switch {
		case g.Username == "" && g.UserID == "":
			bad("username", "required (or set user-id)")
		case g.UserID == "" && g.UserDomainName == "" && g.UserDomainID == "" && g.DomainName == "" && g.DomainID == "":
			bad("user-domain-name", "required with username (or set user-domain-id, domain-name or domain-id)")
		}
	}
	if g.TrustID != "" && appCred {
		bad("trust-id", "cannot be used with an application credential")
	}
	if g.TrustID == "" && !appCred && g.TenantID == "" && g.TenantName != "" &&
		g.TenantDomainID == "" && g.TenantDomainName == "" && g.DomainID == "" && g.DomainName == "" {
		bad("tenant-domain-name", "required with tenant-name (or set tenant-domain-id, domain-name or domain-id)")
	}

	for _, f := range []struct{ key, path string }{{"ca-file", g.CAFile}, {"cert-file", g.CertFile}, {"key-file", g.KeyFile}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); errors.Is(err, fs.ErrNotExist) {
			bad(f.key, "%s does not exist", f.path)
		} else if err != nil {
			bad(f.key, "%v", err)
		}
	}
	if (g.CertFile == "") != (g.KeyFile == "") {
		if g.CertFile == "" {
			bad("cert-file", "required with key-file")
		} else {
			bad("key-file", "required with cert-file")
		}
	}
	switch g.EndpointType {
	case "", "public", "internal", "admin", "publicURL", "internalURL", "adminURL":
	default:
		bad("os-endpoint-type", "must be public, internal or admin, got %q", g.EndpointType)
	}
}

func (c *Config) validateMetadata(p *problems) {
	m := &c.Metadata
	if len(m.SearchOrder) == 0 {
		p.add(0, "Metadata", "search-order", "must name %s and/or %s", MetadataConfigDrive, MetadataMetadataService)
	}
	for i, s := range m.SearchOrder {
		switch {
		case s != MetadataConfigDrive && s != MetadataMetadataService:
			p.add(0, "Metadata", "search-order", "unknown source %q (want %s or %s)", s, MetadataConfigDrive, MetadataMetadataService)
		case slices.Index(m.SearchOrder, s) != i:
			p.add(0, "Metadata", "search-order", "%q is listed twice", s)
		}
	}
	if m.RequestTimeout < 0 {
		p.add(0, "Metadata", "request-timeout", "must not be negative, got %s", m.RequestTimeout)
	}
}

func (c *Config) validateLoadBalancer(p *problems) {
	lb := &c.LoadBalancer
	bad := func(key, format string, args ...any) { p.add(0, "LoadBalancer", key, format, args...) }
	switch lb.LBMethod {
	case "", "ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT":
	default:
		bad("lb-method", "must be ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP or SOURCE_IP_PORT, got %q", lb.LBMethod)
	}
	if lb.ContainerStore != "barbican" && lb.ContainerStore != "external" {
		bad("container-store", "must be barbican or external, got %q", lb.ContainerStore)
	}
	if lb.LBVersion != "" && lb.LBVersion != "v2" {
		bad("lb-version", "only v2 is supported, got %q", lb.LBVersion)
	}
	if lb.MonitorDelay <= 0 {
		bad("monitor-delay", "must be positive, got %s", lb.MonitorDelay)
	}
	if lb.MonitorTimeout <= 0 {
		bad("monitor-timeout", "must be positive, got %s", lb.MonitorTimeout)
	} else if lb.MonitorDelay > 0 && lb.MonitorTimeout > lb.MonitorDelay {
		bad("monitor-timeout", "must not exceed monitor-delay (%s), got %s", lb.MonitorDelay, lb.MonitorTimeout)
	}
	// Octavia's limits for a health monitor.
	if lb.MonitorMaxRetries < 1 || lb.MonitorMaxRetries > 10 {
		bad("monitor-max-retries", "must be between 1 and 10, got %d", lb.MonitorMaxRetries)
	}
	if lb.MonitorMaxRetriesDown < 1 || lb.MonitorMaxRetriesDown > 10 {
		bad("monitor-max-retries-down", "must be between 1 and 10, got %d", lb.MonitorMaxRetriesDown)
	}
	if lb.EnableIngressHostname {
		// <ip>.<suffix> becomes a status hostname: the apiserver wants a DNS name.
		if errs := validation.IsDNS1123Subdomain("192.0.2.1." + lb.IngressHostnameSuffix); len(errs) > 0 {
			bad("ingress-hostname-suffix", "%q does not make DNS names: %s", lb.IngressHostnameSuffix, strings.Join(errs, "; "))
		}
	}
	if lb.MaxSharedLB < 1 {
		bad("max-shared-lb", "must be at least 1, got %d", lb.MaxSharedLB)
	}
}
