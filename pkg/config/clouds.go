package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// cloudsYAML is the part of clouds.yaml (openstacksdk / gophercloud-utils
// format) that maps onto [Global].
type cloudsYAML struct {
	Clouds map[string]cloudEntry `json:"clouds"`
}

type cloudEntry struct {
	Auth struct {
		AuthURL                     string `json:"auth_url"`
		Username                    string `json:"username"`
		UserID                      string `json:"user_id"`
		Password                    string `json:"password"`
		ProjectID                   string `json:"project_id"`
		ProjectName                 string `json:"project_name"`
		TenantID                    string `json:"tenant_id"`
		TenantName                  string `json:"tenant_name"`
		ProjectDomainID             string `json:"project_domain_id"`
		ProjectDomainName           string `json:"project_domain_name"`
		UserDomainID                string `json:"user_domain_id"`
		UserDomainName              string `json:"user_domain_name"`
		DomainID                    string `json:"domain_id"`
		DomainName                  string `json:"domain_name"`
		ApplicationCredentialID     string `json:"application_credential_id"`
		ApplicationCredentialName   string `json:"application_credential_name"`
		ApplicationCredentialSecret string `json:"application_credential_secret"`
		Token                       string `json:"token"`
	} `json:"auth"`
	AuthType     string `json:"auth_type"`
	RegionName   string `json:"region_name"`
	Interface    string `json:"interface"`
	EndpointType string `json:"endpoint_type"`
	Verify       *bool  `json:"verify"`
	CACert       string `json:"cacert"`
	Cert         string `json:"cert"`
	Key          string `json:"key"`
}

// cloudsFileCandidates are the standard clouds.yaml locations, in the order
// openstacksdk and gophercloud-utils search them.
func cloudsFileCandidates() []string {
	var out []string
	if env := os.Getenv("OS_CLIENT_CONFIG_FILE"); env != "" {
		out = append(out, env)
	}
	out = append(out, "clouds.yaml")
	if home, err := os.UserHomeDir(); err == nil {
		out = append(out, filepath.Join(home, ".config", "openstack", "clouds.yaml"))
	}
	return append(out, "/etc/openstack/clouds.yaml")
}

// mergeClouds fills the empty [Global] fields from the named cloud of
// clouds.yaml. cloud.conf values win, as upstream.
func (c *Config) mergeClouds(p *problems) {
	g := &c.Global
	path := g.CloudsFile
	if path == "" {
		for _, cand := range cloudsFileCandidates() {
			if _, err := os.Stat(cand); err == nil {
				path = cand
				break
			}
		}
		if path == "" {
			p.add(0, "Global", "clouds-file", "use-clouds is set but no clouds.yaml was found in %s", strings.Join(cloudsFileCandidates(), ", "))
			return
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			p.add(0, "Global", "clouds-file", "%s does not exist", path)
		} else {
			p.add(0, "Global", "clouds-file", "%v", err)
		}
		return
	}
	var doc cloudsYAML
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p.add(0, "Global", "clouds-file", "%s: %v", path, err)
		return
	}
	name := g.Cloud
	if name == "" {
		name = os.Getenv("OS_CLOUD")
	}
	if name == "" && len(doc.Clouds) == 1 {
		for only := range doc.Clouds {
			name = only
		}
	}
	entry, ok := doc.Clouds[name]
	if !ok {
		var names []string
		for n := range doc.Clouds {
			names = append(names, n)
		}
		sort.Strings(names)
		if name == "" {
			p.add(0, "Global", "cloud", "required: %s has several clouds (%s)", path, strings.Join(names, ", "))
		} else {
			p.add(0, "Global", "cloud", "%q is not in %s (it has: %s)", name, path, strings.Join(names, ", "))
		}
		return
	}
	switch entry.AuthType {
	case "", "password", "v3password", "v3applicationcredential", "applicationcredential", "token", "v3token":
	default:
		p.add(0, "Global", "cloud", "%s: cloud %q: auth_type %q is not supported (want password, v3applicationcredential or token)", path, name, entry.AuthType)
	}

	a := entry.Auth
	fill := func(dst *string, values ...string) {
		if *dst != "" {
			return
		}
		for _, v := range values {
			if v != "" {
				*dst = v
				return
			}
		}
	}
	fill(&g.AuthURL, a.AuthURL)
	fill(&g.Username, a.Username)
	fill(&g.UserID, a.UserID)
	fill(&g.Password, a.Password)
	fill(&g.TenantID, a.ProjectID, a.TenantID)
	fill(&g.TenantName, a.ProjectName, a.TenantName)
	fill(&g.TenantDomainID, a.ProjectDomainID)
	fill(&g.TenantDomainName, a.ProjectDomainName)
	fill(&g.UserDomainID, a.UserDomainID)
	fill(&g.UserDomainName, a.UserDomainName)
	fill(&g.DomainID, a.DomainID)
	fill(&g.DomainName, a.DomainName)
	fill(&g.ApplicationCredentialID, a.ApplicationCredentialID)
	fill(&g.ApplicationCredentialName, a.ApplicationCredentialName)
	fill(&g.ApplicationCredentialSecret, a.ApplicationCredentialSecret)
	fill(&g.Token, a.Token)
	fill(&g.Region, entry.RegionName)
	fill(&g.EndpointType, entry.Interface, entry.EndpointType)
	fill(&g.CAFile, entry.CACert)
	fill(&g.CertFile, entry.Cert)
	fill(&g.KeyFile, entry.Key)
	if entry.Verify != nil && !*entry.Verify {
		g.TLSInsecure = true
	}
}

// resolve reads secret files and clouds.yaml into the Config.
func (c *Config) resolve() ([]Warning, error) {
	var warnings []Warning
	p := &problems{file: c.Source}
	g := &c.Global
	readSecret := func(key, file string, dst *string, inlineKey string) {
		if file == "" {
			return
		}
		if *dst != "" {
			p.add(0, "Global", key, "set together with %s; use one", inlineKey)
			return
		}
		data, err := os.ReadFile(file)
		if err != nil {
			p.add(0, "Global", key, "%v", err)
			return
		}
		*dst = strings.TrimRight(string(data), "\r\n")
		if *dst == "" {
			p.add(0, "Global", key, "%s is empty", file)
		}
	}
	// The trustee logs in as itself, with its password, into the trust.
	if g.TrusteeID != "" && g.UserID == "" {
		g.UserID = g.TrusteeID
	}
	if g.TrusteePassword != "" && g.Password == "" && g.PasswordFile == "" {
		g.Password = g.TrusteePassword
	}
	readSecret("password-file", g.PasswordFile, &g.Password, "password")
	readSecret("application-credential-secret-file", g.ApplicationCredentialSecretFile, &g.ApplicationCredentialSecret, "application-credential-secret")
	if g.UseClouds {
		c.mergeClouds(p)
	} else if g.CloudsFile != "" || g.Cloud != "" {
		warnings = append(warnings, Warning{File: c.Source, Section: "Global", Key: "use-clouds",
			Msg: "clouds-file or cloud is set but use-clouds is not true; clouds.yaml is not read"})
	}
	if g.Token != "" {
		// As upstream (gophercloud-utils' clientconfig): the token stands
		// for the user, whose name and password are dropped.
		for _, f := range []struct{ key, value string }{{"username", g.Username}, {"user-id", g.UserID}, {"password", g.Password}} {
			if f.value != "" {
				warnings = append(warnings, Warning{File: c.Source, Section: "Global", Key: f.key, Msg: "ignored: token is set and stands for the user"})
			}
		}
	}
	return warnings, p.err()
}
