package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const cloudsYAMLDoc = `
clouds:
  openstack:
    auth:
      auth_url: https://keystone.example.com:5000/v3
      username: from-yaml
      password: yaml-secret
      project_name: k8s
      project_domain_name: Default
      user_domain_name: Default
    region_name: RegionOne
    interface: internal
    verify: false
  appcred:
    auth_type: v3applicationcredential
    auth:
      auth_url: https://other.example.com/v3
      application_credential_id: ac-id
      application_credential_secret: ac-secret
  token:
    auth_type: token
    auth:
      auth_url: https://other.example.com/v3
      token: yaml-token
      project_id: 0123456789abcdef0123456789abcdef
  oidc:
    auth_type: v3oidcpassword
    auth:
      auth_url: https://other.example.com/v3
`

func TestCloudsYAML(t *testing.T) {
	dir := t.TempDir()
	clouds := filepath.Join(dir, "clouds.yaml")
	if err := os.WriteFile(clouds, []byte(cloudsYAMLDoc), 0o600); err != nil {
		t.Fatal(err)
	}
	head := "[Global]\nuse-clouds = true\nclouds-file = " + clouds + "\n"

	t.Run("the named cloud fills the empty keys and cloud.conf wins", func(t *testing.T) {
		cfg, _, err := Read("cloud.conf", strings.NewReader(head+"cloud = openstack\nusername = from-conf\n"))
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		g := cfg.Global
		if g.AuthURL != "https://keystone.example.com:5000/v3" || g.Username != "from-conf" || g.Password != "yaml-secret" ||
			g.TenantName != "k8s" || g.TenantDomainName != "Default" || g.UserDomainName != "Default" ||
			g.Region != "RegionOne" || g.EndpointType != "internal" || !g.TLSInsecure {
			t.Errorf("Global = %+v", g)
		}
	})
	t.Run("an application credential cloud needs no user", func(t *testing.T) {
		cfg, _, err := Read("cloud.conf", strings.NewReader(head+"cloud = appcred\n"))
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if cfg.Global.ApplicationCredentialID != "ac-id" || cfg.Global.ApplicationCredentialSecret != "ac-secret" {
			t.Errorf("Global = %+v", cfg.Global)
		}
	})

	t.Run("a token cloud's token is read and needs no user", func(t *testing.T) {
		cfg, _, err := Read("cloud.conf", strings.NewReader(head+"cloud = token\n"))
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if g := cfg.Global; g.Token != "yaml-token" || g.TenantID != "0123456789abcdef0123456789abcdef" {
			t.Errorf("Global = %+v", g)
		}
	})

	failures := []struct {
		name, conf, want string
	}{
		{"a cloud that is not in the file is an error listing the clouds", head + "cloud = nope\n",
			`cloud.conf: [Global] cloud: "nope" is not in ` + clouds + ` (it has: appcred, oidc, openstack, token)`},
		{"no cloud name with several clouds is an error", head,
			`cloud.conf: [Global] cloud: required: ` + clouds + ` has several clouds (appcred, oidc, openstack, token)`},
		{"an OIDC cloud is not supported", head + "cloud = oidc\n",
			`auth_type "v3oidcpassword" is not supported (want password, v3applicationcredential or token)`},
		{"a missing clouds file is an error", "[Global]\nuse-clouds = true\ncloud = x\nclouds-file = " + filepath.Join(dir, "none.yaml") + "\n",
			`cloud.conf: [Global] clouds-file: ` + filepath.Join(dir, "none.yaml") + ` does not exist`},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("OS_CLOUD", "")
			_, _, err := Read("cloud.conf", strings.NewReader(tt.conf))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}

	t.Run("clouds-file without use-clouds is a warning", func(t *testing.T) {
		_, w, err := Read("cloud.conf", strings.NewReader(minimalGlobal+"clouds-file = "+clouds+"\n"))
		if err != nil || len(w) != 1 || w[0].Key != "use-clouds" {
			t.Errorf("warnings %v, error %v; want one use-clouds warning", w, err)
		}
	})
}
