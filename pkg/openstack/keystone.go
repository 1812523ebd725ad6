package openstack

import (
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"

	"github.com/stackward/stackward/pkg/config"
)

// Keystone: how [Global] becomes a token request, and which project the
// token is scoped to. The authentication itself is in NewClients.

// AuthOptions maps [Global] onto gophercloud's options the way Keystone
// clients do: domain-id/domain-name are the default for both the user's and
// the project's domain, and the scope when no project is given.
func AuthOptions(g config.Global) gophercloud.AuthOptions {
	userDomainID, userDomainName := g.UserDomainID, g.UserDomainName
	if userDomainID == "" && userDomainName == "" {
		userDomainID, userDomainName = g.DomainID, g.DomainName
	}
	ao := gophercloud.AuthOptions{
		IdentityEndpoint:            g.AuthURL,
		Username:                    g.Username,
		UserID:                      g.UserID,
		Password:                    g.Password,
		DomainID:                    userDomainID,
		DomainName:                  userDomainName,
		ApplicationCredentialID:     g.ApplicationCredentialID,
		ApplicationCredentialName:   g.ApplicationCredentialName,
		ApplicationCredentialSecret: g.ApplicationCredentialSecret,
		AllowReauth:                 true,
	}
	if g.Token != "" {
		// As gophercloud-utils' clientconfig, which upstream uses: the
		// token stands for the user. It is re-scoped below, and renewed by
		// re-scoping it again, which works until it expires.
		ao.TokenID = g.Token
		ao.Username, ao.UserID, ao.Password, ao.DomainID, ao.DomainName = "", "", "", "", ""
	}
	if g.ApplicationCredentialID != "" || g.ApplicationCredentialName != "" {
		// An application credential carries its own scope.
		ao.Password = ""
		return ao
	}
	projectDomainID, projectDomainName := g.TenantDomainID, g.TenantDomainName
	if projectDomainID == "" && projectDomainName == "" {
		projectDomainID, projectDomainName = g.DomainID, g.DomainName
	}
	switch {
	case g.TrustID != "":
		ao.Scope = &gophercloud.AuthScope{TrustID: g.TrustID}
	case g.TenantID != "":
		ao.Scope = &gophercloud.AuthScope{ProjectID: g.TenantID}
	case g.TenantName != "":
		ao.Scope = &gophercloud.AuthScope{ProjectName: g.TenantName, DomainID: projectDomainID}
		if projectDomainID == "" {
			ao.Scope.DomainName = projectDomainName
		}
	case g.DomainID != "":
		ao.Scope = &gophercloud.AuthScope{DomainID: g.DomainID}
	case g.DomainName != "":
		ao.Scope = &gophercloud.AuthScope{DomainName: g.DomainName}
	default:
		ao.Scope = &gophercloud.AuthScope{}
	}
	return ao
}

func availability(endpointType string) gophercloud.Availability {
	switch strings.TrimSuffix(endpointType, "URL") {
	case "internal":
		return gophercloud.AvailabilityInternal
	case "admin":
		return gophercloud.AvailabilityAdmin
	}
	return gophercloud.AvailabilityPublic
}

// authProject returns the project the token is scoped to, or "" when the
// token is not project-scoped (or not a Keystone v3 token).
func authProject(provider *gophercloud.ProviderClient) string {
	r, ok := provider.GetAuthResult().(interface {
		ExtractProject() (*tokens.Project, error)
	})
	if !ok {
		return ""
	}
	p, err := r.ExtractProject()
	if err != nil || p == nil {
		return ""
	}
	return p.ID
}
