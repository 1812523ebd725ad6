package openstack

import (
	"context"
	"encoding/pem"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stackward/stackward/pkg/config"
)

func passwordConfig(authURL string) *config.Config {
	cfg := config.Defaults()
	cfg.Global = config.Global{
		AuthURL: authURL, Username: "ccm", Password: "secret", UserDomainName: "Default",
		TenantName: "k8s", TenantDomainName: "Default", Region: "RegionOne",
	}
	return cfg
}

var fastRetry = RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, MaxElapsed: 5 * time.Second}

func newTestClients(t *testing.T, cfg *config.Config) (*Clients, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := NewClients(ctx, cfg, ClientOptions{Registerer: reg, UserAgent: "stackward-test/1.0", HTTPTimeout: 5 * time.Second, Retry: fastRetry})
	if err != nil {
		t.Fatalf("NewClients: %v", err)
	}
	return c, reg
}

// at walks a decoded JSON document.
func at(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func TestAuthentication(t *testing.T) {
	tests := []struct {
		name   string
		global config.Global
		check  func(t *testing.T, body map[string]any)
	}{
		{
			name:   "a password user is scoped to the project by name in its domain",
			global: passwordConfig("").Global,
			check: func(t *testing.T, body map[string]any) {
				if got := at(body, "auth", "identity", "password", "user", "name"); got != "ccm" {
					t.Errorf("user name = %v", got)
				}
				if got := at(body, "auth", "identity", "password", "user", "domain", "name"); got != "Default" {
					t.Errorf("user domain = %v", got)
				}
				if got := at(body, "auth", "scope", "project", "name"); got != "k8s" {
					t.Errorf("project = %v", got)
				}
				if got := at(body, "auth", "scope", "project", "domain", "name"); got != "Default" {
					t.Errorf("project domain = %v", got)
				}
			},
		},
		{
			name:   "domain-id is the default domain of the user and the project",
			global: config.Global{Username: "ccm", Password: "p", DomainID: "dom-1", TenantName: "k8s"},
			check: func(t *testing.T, body map[string]any) {
				if got := at(body, "auth", "identity", "password", "user", "domain", "id"); got != "dom-1" {
					t.Errorf("user domain id = %v", got)
				}
				if got := at(body, "auth", "scope", "project", "domain", "id"); got != "dom-1" {
					t.Errorf("project domain id = %v", got)
				}
			},
		},
		{
			name:   "a trustee is scoped to its trust",
			global: config.Global{UserID: "trustee", Password: "p", TrustID: "trust-1", TenantID: "ignored"},
			check: func(t *testing.T, body map[string]any) {
				if got := at(body, "auth", "identity", "password", "user", "id"); got != "trustee" {
					t.Errorf("user id = %v", got)
				}
				if got := at(body, "auth", "scope", "OS-TRUST:trust", "id"); got != "trust-1" {
					t.Errorf("trust = %v", got)
				}
			},
		},
		{
			name:   "a token stands for the user, whose name and password are not sent, and is re-scoped to the project",
			global: config.Global{Token: "gAAAAAB-tok", Username: "ccm", Password: "p", UserDomainName: "Default", TenantName: "k8s", DomainName: "Default"},
			check: func(t *testing.T, body map[string]any) {
				if got := at(body, "auth", "identity", "methods"); !reflect.DeepEqual(got, []any{"token"}) {
					t.Errorf("methods = %v, want [token]", got)
				}
				if got := at(body, "auth", "identity", "token", "id"); got != "gAAAAAB-tok" {
					t.Errorf("token id = %v", got)
				}
				if got := at(body, "auth", "identity", "password"); got != nil {
					t.Errorf("password = %v, want none", got)
				}
				if got := at(body, "auth", "scope", "project", "name"); got != "k8s" {
					t.Errorf("project = %v", got)
				}
				if got := at(body, "auth", "scope", "project", "domain", "name"); got != "Default" {
					t.Errorf("project domain = %v", got)
				}
			},
		},
		{
			name:   "an application credential sends no scope",
			global: config.Global{ApplicationCredentialID: "ac-1", ApplicationCredentialSecret: "s", TenantName: "ignored"},
			check: func(t *testing.T, body map[string]any) {
				if got := at(body, "auth", "identity", "application_credential", "id"); got != "ac-1" {
					t.Errorf("application credential id = %v", got)
				}
				if got := at(body, "auth", "scope"); got != nil {
					t.Errorf("scope = %v, want none", got)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeCloud(t)
			cfg := config.Defaults()
			cfg.Global = tt.global
			cfg.Global.AuthURL = f.authURL()
			newTestClients(t, cfg)
			if len(f.authBodies) != 1 {
				t.Fatalf("%d token requests, want 1", len(f.authBodies))
			}
			tt.check(t, f.authBodies[0])
		})
	}
}

func TestServiceClientFindsCatalogEntries(t *testing.T) {
	f := newFakeCloud(t)
	c, _ := newTestClients(t, passwordConfig(f.authURL()))
	sc, err := c.ServiceClient("network")
	if err != nil || sc.Endpoint != f.srv.URL+"/network/" {
		t.Fatalf("ServiceClient(network) = %+v, %v", sc, err)
	}
	if _, err := c.ServiceClient("load-balancer"); err == nil || !strings.Contains(err.Error(), "find the load-balancer service") {
		t.Fatalf("a service missing from the catalog: %v", err)
	}
}

func TestAuthenticationFailureIsAnError(t *testing.T) {
	f := newFakeCloud(t)
	f.fail("POST", "/v3/auth/tokens", 401)
	_, err := NewClients(context.Background(), passwordConfig(f.authURL()), ClientOptions{Retry: fastRetry})
	if err == nil || !gophercloud.ResponseCodeIs(err, 401) {
		t.Fatalf("err = %v, want the 401", err)
	}
	if n := f.count("POST", "/v3/auth/tokens"); n != 1 {
		t.Errorf("a 401 was retried: %d token requests", n)
	}
}

func TestGetServer(t *testing.T) {
	f := newFakeCloud(t)
	gone := novaServerJSON("gone", "node-gone", StatusDeleted)
	f.servers = []map[string]any{novaServerJSON("s1", "node-1", StatusActive), gone}
	c, reg := newTestClients(t, passwordConfig(f.authURL()))
	ctx := context.Background()

	got, err := c.Compute.GetServer(ctx, "s1")
	if err != nil {
		t.Fatalf("GetServer: %v", err)
	}
	want := &Server{
		ID: "s1", Name: "node-1", Status: StatusActive, TenantID: "proj-1", FlavorName: "m1.large", AvailabilityZone: "az-1",
		Metadata: map[string]string{"role": "worker"},
		Addresses: map[string][]ServerAddress{"private": {
			{Addr: "10.0.0.5", Version: 4, Type: AddressFixed, MAC: "fa:16:3e:00:00:01"},
			{Addr: "203.0.113.5", Version: 4, Type: AddressFloating, MAC: "fa:16:3e:00:00:01"},
		}},
		LaunchedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GetServer:\n got  %+v\n want %+v", got, want)
	}
	if f.microversns[0] != ComputeMicroversion || !strings.HasPrefix(f.userAgents[0], "stackward-test/1.0") {
		t.Errorf("microversion %q, user agent %q", f.microversns[0], f.userAgents[0])
	}
	if n := histogramCount(t, reg, "compute", "get_server"); n != 1 {
		t.Errorf("get_server observations = %d, want 1", n)
	}

	tests := []struct {
		name         string
		id           string
		faults       []int
		wantNotFound bool
		wantErr      bool
		wantRequests int
	}{
		{name: "a 404 is not found, asked once", id: "nope", wantNotFound: true, wantErr: true, wantRequests: 1},
		{name: "a deleted server is not found", id: "gone", wantNotFound: true, wantErr: true, wantRequests: 1},
		{name: "503s are retried until the server comes back", id: "s1", faults: []int{503, 503}, wantRequests: 3},
		{name: "a 429 is retried", id: "s1", faults: []int{429}, wantRequests: 2},
		{name: "a lasting 500 is an error but never not found", id: "s1", faults: []int{500, 500, 500}, wantErr: true, wantRequests: 3},
		{name: "a 403 is an error, not found is not assumed, no retry", id: "s1", faults: []int{403}, wantErr: true, wantRequests: 1},
		{name: "a 404 that is not Nova's (a proxy's page) is an error, never not found", id: "s1", faults: []int{404}, wantErr: true, wantRequests: 1},
		{name: "a 200 without a server in it is an error, never an empty server", id: "answered-by-a-proxy", wantErr: true, wantRequests: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := "/compute/v2.1/servers/" + tt.id
			before := f.count("GET", path)
			f.fail("GET", path, tt.faults...)
			s, err := c.Compute.GetServer(ctx, tt.id)
			if got := f.count("GET", path) - before; got != tt.wantRequests {
				t.Errorf("%d requests, want %d", got, tt.wantRequests)
			}
			if (err != nil) != tt.wantErr || IsNotFound(err) != tt.wantNotFound {
				t.Fatalf("GetServer = %+v, %v; wantErr %v, wantNotFound %v", s, err, tt.wantErr, tt.wantNotFound)
			}
			if !tt.wantErr && s.ID != tt.id {
				t.Errorf("got server %s", s.ID)
			}
		})
	}
	if errs := errorCounts(t, reg, "compute", "get_server"); errs["404"] != 2 || errs["503"] != 2 || errs["500"] != 3 || errs["403"] != 1 || errs["429"] != 1 {
		t.Errorf("error counts = %v", errs)
	}
}

func TestListServersFollowsPagination(t *testing.T) {
	f := newFakeCloud(t)
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		f.servers = append(f.servers, novaServerJSON(id, "node-"+id, StatusActive))
	}
	f.pageSize = 2
	c, _ := newTestClients(t, passwordConfig(f.authURL()))

	list, err := c.Compute.ListServers(context.Background(), ListServersOpts{Name: `^node\.a$`, Status: StatusActive})
	if err != nil {
		t.Fatalf("ListServers: %v", err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, ",") != "a,b,c,d,e" {
		t.Errorf("ids = %v, want every page in order", ids)
	}
	if n := f.count("GET", "/compute/v2.1/servers/detail"); n != 3 {
		t.Errorf("%d page requests, want 3", n)
	}
	if q := f.listQueries[0]; !strings.Contains(q, "name=%5Enode%5C.a%24") || !strings.Contains(q, "status=ACTIVE") {
		t.Errorf("first query %q lacks the filters", q)
	}
}

func TestFlavorNamesOnCloudsBefore247(t *testing.T) {
	f := newFakeCloud(t)
	for _, id := range []string{"a", "b", "c"} {
		s := novaServerJSON(id, "node-"+id, StatusActive)
		s["flavor"] = map[string]any{"id": "f-" + map[string]string{"a": "1", "b": "1", "c": "gone"}[id]}
		f.servers = append(f.servers, s)
	}
	f.flavors["f-1"] = "m1.small"
	c, _ := newTestClients(t, passwordConfig(f.authURL()))

	list, err := c.Compute.ListServers(context.Background(), ListServersOpts{})
	if err != nil {
		t.Fatalf("ListServers: %v", err)
	}
	got := []string{list[0].FlavorName, list[1].FlavorName, list[2].FlavorName}
	if !reflect.DeepEqual(got, []string{"m1.small", "m1.small", "f-gone"}) {
		t.Errorf("flavor names = %v; want names, and the ID of a deleted flavor", got)
	}
	if _, err := c.Compute.GetServer(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if n := f.count("GET", "/compute/v2.1/flavors/f-1"); n != 1 {
		t.Errorf("flavor f-1 fetched %d times, want once", n)
	}
}

func TestListPorts(t *testing.T) {
	f := newFakeCloud(t)
	f.ports = []map[string]any{
		{"id": "p1", "name": "eth0", "network_id": "n1", "device_id": "s1", "mac_address": "fa:16:3e:00:00:01",
			"fixed_ips":             []any{map[string]any{"subnet_id": "sub1", "ip_address": "10.0.0.5"}},
			"allowed_address_pairs": []any{map[string]any{"ip_address": "10.0.0.100", "mac_address": "fa:16:3e:00:00:01"}}},
		{"id": "p2", "network_id": "n1", "device_id": "s2", "fixed_ips": []any{}},
	}
	c, reg := newTestClients(t, passwordConfig(f.authURL()))
	got, err := c.Network.ListPorts(context.Background(), "s1")
	if err != nil {
		t.Fatalf("ListPorts: %v", err)
	}
	want := []Port{{ID: "p1", Name: "eth0", NetworkID: "n1", DeviceID: "s1", MACAddress: "fa:16:3e:00:00:01",
		FixedIPs:            []FixedIP{{SubnetID: "sub1", IPAddress: "10.0.0.5"}},
		AllowedAddressPairs: []AddressPair{{IPAddress: "10.0.0.100", MACAddress: "fa:16:3e:00:00:01"}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ListPorts:\n got  %+v\n want %+v", got, want)
	}
	if n := histogramCount(t, reg, "network", "list_ports"); n != 1 {
		t.Errorf("list_ports observations = %d, want 1", n)
	}
}

func TestAnExpiredTokenIsRenewed(t *testing.T) {
	f := newFakeCloud(t)
	f.servers = []map[string]any{novaServerJSON("s1", "node-1", StatusActive)}
	c, _ := newTestClients(t, passwordConfig(f.authURL()))
	f.expireTokens()
	if _, err := c.Compute.GetServer(context.Background(), "s1"); err != nil {
		t.Fatalf("GetServer after the token expired: %v", err)
	}
	if f.issued != 2 {
		t.Errorf("%d tokens issued, want 2 (a re-authentication)", f.issued)
	}
}

func TestTLSTrustsOnlyTheConfiguredCA(t *testing.T) {
	f := newFakeCloudTLS(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
	if err := os.WriteFile(caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := passwordConfig(f.authURL())
	noRetry := ClientOptions{Retry: RetryPolicy{MaxAttempts: 1}}
	if _, err := NewClients(context.Background(), cfg, noRetry); err == nil {
		t.Fatal("NewClients trusted an unknown CA")
	}
	cfg.Global.CAFile = caFile
	if _, err := NewClients(context.Background(), cfg, noRetry); err != nil {
		t.Fatalf("NewClients with ca-file: %v", err)
	}
	cfg.Global.CAFile, cfg.Global.TLSInsecure = "", true
	if _, err := NewClients(context.Background(), cfg, noRetry); err != nil {
		t.Fatalf("NewClients with tls-insecure: %v", err)
	}
}
