package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const minimalGlobal = `
[Global]
auth-url = https://keystone.example.com:5000/v3
username = ccm
password = secret
user-domain-name = Default
tenant-name = k8s
tenant-domain-name = Default
`

func TestReadUpstreamFile(t *testing.T) {
	conf := `
; an upstream OCCM cloud.conf, unchanged
[Global]
auth-url="https://keystone.example.com:5000/v3"
username = ccm
password = "p;a#s\"s"   # a comment
user-domain-name=Default
project-id = 0123456789abcdef
region = RegionOne
tls-insecure = yes

[Networking]
internal-network-name = k8s
internal-network-name = k8s-v6
public-network-name = ext
ipv6-support-disabled
address-sort-order = 192.168.0.0/16, 2001:db8::/32

[Metadata]
search-order = metadataService,configDrive
request-timeout = 5s

[LoadBalancer]
floating-network-id = f1
subnet-id = s1
lb-method = LEAST_CONNECTIONS
create-monitor = true
monitor-delay = 10s
monitor-timeout = 4s
monitor-max-retries = 3
manage-security-groups = true
max-shared-lb = 5

[Route]
router-id = r1
`
	cfg, warnings, err := Read("cloud.conf", strings.NewReader(conf))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %v, want none", warnings)
	}
	g := cfg.Global
	if g.AuthURL != "https://keystone.example.com:5000/v3" || g.Password != `p;a#s"s` || g.TenantID != "0123456789abcdef" ||
		g.UserDomainName != "Default" || g.Region != "RegionOne" || !g.TLSInsecure {
		t.Errorf("Global = %+v", g)
	}
	wantNet := Networking{
		InternalNetworkNames: []string{"k8s", "k8s-v6"},
		PublicNetworkNames:   []string{"ext"},
		IPv6SupportDisabled:  true,
		AddressSortOrder:     []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("2001:db8::/32")},
	}
	if !reflect.DeepEqual(cfg.Networking, wantNet) {
		t.Errorf("Networking = %+v, want %+v", cfg.Networking, wantNet)
	}
	if want := (Metadata{SearchOrder: []string{"metadataService", "configDrive"}, RequestTimeout: 5 * time.Second}); !reflect.DeepEqual(cfg.Metadata, want) {
		t.Errorf("Metadata = %+v, want %+v", cfg.Metadata, want)
	}
	lb := cfg.LoadBalancer
	if !lb.Enabled || lb.FloatingNetworkID != "f1" || lb.SubnetID != "s1" || lb.LBMethod != "LEAST_CONNECTIONS" || !lb.CreateMonitor ||
		lb.MonitorDelay != 10*time.Second || lb.MonitorTimeout != 4*time.Second || lb.MonitorMaxRetries != 3 ||
		lb.MonitorMaxRetriesDown != 3 || !lb.ManageSecurityGroups || lb.MaxSharedLB != 5 || !lb.CascadeDelete {
		t.Errorf("LoadBalancer = %+v", lb)
	}
	if cfg.Route.RouterID != "r1" {
		t.Errorf("Route = %+v", cfg.Route)
	}
}

func TestUnknownThingsAreWarnings(t *testing.T) {
	conf := minimalGlobal + `bs-version = v3
[BlockStorage]
bs-version = v3
[Route "other"]
router-id = x
[Networking]
public-network-name = ext
public-network-name =
public-network-name = ext2
[Route]
router-id = a
router-id = b
`
	cfg, warnings, err := Read("cloud.conf", strings.NewReader(conf))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	var got []string
	for _, w := range warnings {
		got = append(got, w.String())
	}
	want := []string{
		"cloud.conf:9: [Global] bs-version: unknown key, ignored",
		"cloud.conf:10: [BlockStorage]: unknown section, ignored",
		`cloud.conf:12: [Route "other"]: subsections are not supported, section ignored`,
		"cloud.conf:20: [Route] router-id: set again (first on line 19); the last value wins",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings:\n got  %q\n want %q", got, want)
	}
	if !reflect.DeepEqual(cfg.Networking.PublicNetworkNames, []string{"ext2"}) {
		t.Errorf("an empty value should clear a repeatable key: %q", cfg.Networking.PublicNetworkNames)
	}
	if cfg.Route.RouterID != "b" {
		t.Errorf("router-id = %q, want the last value", cfg.Route.RouterID)
	}
}

func TestEveryProblemIsReportedAtOnce(t *testing.T) {
	tests := []struct {
		name string
		conf string
		want []string
	}{
		{
			name: "values of the wrong type are all reported with their line",
			conf: `[Global]
tls-insecure = maybe
[Networking]
address-sort-order = 10.0.0.0/8, bogus, 10.0.0.1/33
[LoadBalancer]
monitor-delay = 5
max-shared-lb = many
`,
			want: []string{
				`cloud.conf:2: [Global] tls-insecure: invalid boolean "maybe" (want true or false)`,
				`cloud.conf:4: [Networking] address-sort-order: invalid CIDR "bogus", "10.0.0.1/33"`,
				`cloud.conf:6: [LoadBalancer] monitor-delay: invalid duration "5" (want e.g. 5s)`,
				`cloud.conf:7: [LoadBalancer] max-shared-lb: invalid integer "many"`,
			},
		},
		{
			name: "syntax errors name their line",
			conf: "auth-url = x\n[Global\n[Global]\npassword = \"open\n",
			want: []string{
				`cloud.conf:1: key outside of any section: "auth-url = x"`,
				`cloud.conf:2: unterminated section header "[Global"`,
				`cloud.conf:4: [Global] password: unterminated quote`,
			},
		},
		{
			name: "a relative auth-url and missing credentials are all reported",
			conf: "[Global]\nauth-url = keystone:5000\ntenant-name = k8s\n",
			want: []string{
				`cloud.conf: [Global] auth-url: must be an absolute http(s) URL, got "keystone:5000"`,
				`cloud.conf: [Global] password: required (or use application-credential-id and application-credential-secret, or token)`,
				`cloud.conf: [Global] username: required (or set user-id)`,
				`cloud.conf: [Global] tenant-domain-name: required with tenant-name (or set tenant-domain-id, domain-name or domain-id)`,
			},
		},
		{
			name: "a username needs its domain",
			conf: "[Global]\nauth-url = http://k:5000/v3\nusername = u\npassword = p\ntenant-id = t\n",
			want: []string{`cloud.conf: [Global] user-domain-name: required with username (or set user-domain-id, domain-name or domain-id)`},
		},
		{
			name: "an application credential needs its secret",
			conf: "[Global]\nauth-url = http://k:5000/v3\napplication-credential-id = ac\n",
			want: []string{`cloud.conf: [Global] application-credential-secret: required with an application credential`},
		},
		{
			name: "a token needs a scope",
			conf: "[Global]\nauth-url = http://k:5000/v3\ntoken = gAAAAAB\n",
			want: []string{`cloud.conf: [Global] token: needs a scope to re-scope the token to: set tenant-id (or tenant-name), domain-id or domain-name`},
		},
		{
			name: "a token with an application credential or a trust is refused",
			conf: "[Global]\nauth-url = http://k:5000/v3\ntoken = gAAAAAB\napplication-credential-id = ac\napplication-credential-secret = s\ntrust-id = tr\n",
			want: []string{
				`cloud.conf: [Global] token: cannot be used with an application credential (application-credential-*): use one`,
				`cloud.conf: [Global] token: cannot be used with trust-id: a trust is entered with trustee-id and trustee-password`,
				`cloud.conf: [Global] trust-id: cannot be used with an application credential`,
			},
		},
		{
			name: "a token's project name needs its domain",
			conf: "[Global]\nauth-url = http://k:5000/v3\ntoken = gAAAAAB\ntenant-name = k8s\n",
			want: []string{`cloud.conf: [Global] tenant-domain-name: required with tenant-name (or set tenant-domain-id, domain-name or domain-id)`},
		},
		{
			name: "TLS files must exist and come in pairs",
			conf: minimalGlobal + "ca-file = /nonexistent/ca.pem\ncert-file = /nonexistent/cert.pem\n",
			want: []string{
				`cloud.conf: [Global] ca-file: /nonexistent/ca.pem does not exist`,
				`cloud.conf: [Global] cert-file: /nonexistent/cert.pem does not exist`,
				`cloud.conf: [Global] key-file: required with cert-file`,
			},
		},
		{
			name: "metadata and load balancer values out of range are reported",
			conf: minimalGlobal + `[Metadata]
search-order = configDrive, configDrive, cdrom
[LoadBalancer]
lb-method = RANDOM
monitor-delay = 3s
monitor-timeout = 5s
monitor-max-retries = 0
max-shared-lb = 0
`,
			want: []string{
				`cloud.conf: [Metadata] search-order: "configDrive" is listed twice`,
				`cloud.conf: [Metadata] search-order: unknown source "cdrom" (want configDrive or metadataService)`,
				`cloud.conf: [LoadBalancer] lb-method: must be ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP or SOURCE_IP_PORT, got "RANDOM"`,
				`cloud.conf: [LoadBalancer] monitor-timeout: must not exceed monitor-delay (3s), got 5s`,
				`cloud.conf: [LoadBalancer] monitor-max-retries: must be between 1 and 10, got 0`,
				`cloud.conf: [LoadBalancer] max-shared-lb: must be at least 1, got 0`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := Read("cloud.conf", strings.NewReader(tt.conf))
			if err == nil {
				t.Fatalf("Read succeeded with %+v, want errors", cfg)
			}
			if cfg != nil {
				t.Errorf("Read returned a Config with an error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
			got := strings.Split(err.Error(), "\n")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n got  %q\n want %q", got, tt.want)
			}
		})
	}
}

func TestValidConfigurations(t *testing.T) {
	tests := []struct {
		name string
		conf string
	}{
		{"password with user-id and project-id", "[Global]\nauth-url = http://k/v3\nuser-id = u\npassword = p\nproject-id = t\n"},
		{"application credential by id needs no user", "[Global]\nauth-url = http://k/v3\napplication-credential-id = ac\napplication-credential-secret = s\n"},
		{"application credential by name with a user and domain", "[Global]\nauth-url = http://k/v3\napplication-credential-name = ac\napplication-credential-secret = s\nusername = u\ndomain-name = Default\n"},
		{"a Magnum trust with its trustee", "[Global]\nauth-url = http://k/v3\ntrust-id = tr\ntrustee-id = te\ntrustee-password = p\n"},
		{"a token re-scoped to a project by ID", "[Global]\nauth-url = http://k/v3\ntoken = gAAAAAB\ntenant-id = t\n"},
		{"a token re-scoped to a project by name in a domain", "[Global]\nauth-url = http://k/v3\ntoken = gAAAAAB\nproject-name = k8s\ndomain-name = Default\n"},
		{"a token re-scoped to a domain", "[Global]\nauth-url = http://k/v3\ntoken = gAAAAAB\ndomain-id = default\n"},
		{"names are case-insensitive and project aliases are accepted", "[global]\nAUTH-URL = http://k/v3\nUsername = u\npassword = p\ndomain-id = default\nproject-name = k8s\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, w, err := Read("cloud.conf", strings.NewReader(tt.conf)); err != nil || len(w) != 0 {
				t.Fatalf("Read: warnings %v, error %v", w, err)
			}
		})
	}
}

func TestSecretsFromFiles(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := "[Global]\nauth-url = http://k/v3\nuser-id = u\ntenant-id = t\n"

	cfg, _, err := Read("cloud.conf", strings.NewReader(base+"password-file = "+pw+"\n"))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if cfg.Global.Password != "from-file" {
		t.Errorf("password = %q, want the file's content without the newline", cfg.Global.Password)
	}

	_, _, err = Read("cloud.conf", strings.NewReader(base+"password = inline\npassword-file = "+pw+"\n"))
	if err == nil || !strings.Contains(err.Error(), "[Global] password-file: set together with password; use one") {
		t.Errorf("inline and file password: error %v", err)
	}
	_, _, err = Read("cloud.conf", strings.NewReader(base+"password-file = "+filepath.Join(dir, "missing")+"\n"))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "[Global] password-file:") {
		t.Errorf("missing password file: error %v", err)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cloud.conf")
	if err := os.WriteFile(path, []byte("[Global]\nauth-url = nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path+": [Global] auth-url: must be an absolute http(s) URL") {
		t.Errorf("Load: %v", err)
	}
	_, _, err = Load(filepath.Join(dir, "missing.conf"))
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrInvalid) {
		t.Errorf("Load of a missing file: %v, want a not-exist error that is not ErrInvalid", err)
	}
}

func TestSecretsAreNotPrinted(t *testing.T) {
	cfg, _, err := Read("cloud.conf", strings.NewReader(minimalGlobal+"application-credential-secret = acsecret\napplication-credential-id = ac\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", *cfg), fmt.Sprint(cfg.Global)} {
		if strings.Contains(out, "secret") || !strings.Contains(out, "REDACTED") || !strings.Contains(out, "keystone.example.com") {
			t.Errorf("want secrets redacted and the rest printed: %s", out)
		}
	}
}

func TestATokenStandsForTheUser(t *testing.T) {
	cfg, w, err := Read("cloud.conf", strings.NewReader(minimalGlobal+"token = gAAAAABtoken\n"))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if cfg.Global.Token != "gAAAAABtoken" {
		t.Errorf("token = %q", cfg.Global.Token)
	}
	var ignored []string
	for _, x := range w {
		if x.Section == "Global" && strings.Contains(x.Msg, "token is set") {
			ignored = append(ignored, x.Key)
		}
	}
	if !reflect.DeepEqual(ignored, []string{"username", "password"}) {
		t.Errorf("warnings %v, want username and password said to be ignored", w)
	}
	if out := fmt.Sprint(cfg.Global); strings.Contains(out, "gAAAAABtoken") || strings.Contains(out, "secret") {
		t.Errorf("the token or the password is printed: %s", out)
	}
}

func TestAByteOrderMarkIsIgnored(t *testing.T) {
	if _, _, err := Read("cloud.conf", strings.NewReader("\ufeff"+strings.TrimPrefix(minimalGlobal, "\n"))); err != nil {
		t.Fatalf("Read: %v", err)
	}
}

func TestTheTrusteeLogsInAsItself(t *testing.T) {
	cfg, _, err := Read("cloud.conf", strings.NewReader("[Global]\nauth-url = http://k/v3\ntrust-id = tr\ntrustee-id = te\ntrustee-password = p\n"))
	if err != nil {
		t.Fatal(err)
	}
	if g := cfg.Global; g.UserID != "te" || g.Password != "p" || g.TrustID != "tr" {
		t.Errorf("Global = %v, want user-id te with the trustee's password", g)
	}
}

func TestValidateNamesAConfigBuiltInCode(t *testing.T) {
	err := Defaults().Validate()
	if err == nil || !strings.HasPrefix(err.Error(), "cloud config: [Global] auth-url: required") {
		t.Fatalf("Validate = %v", err)
	}
}
