package cloudsim

import (
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
)

func TestAuthentication(t *testing.T) {
	_, authURL := startSim(t, Options{})
	root := authURL[:len(authURL)-len("/v3")] + "/"
	tests := []struct {
		name    string
		ao      gophercloud.AuthOptions
		wantErr bool
		project string
	}{
		{name: "password with user and project names in the Default domain", ao: demoAuth(authURL), project: "demo"},
		{name: "an unversioned auth URL is discovered through the versions document",
			ao: gophercloud.AuthOptions{IdentityEndpoint: root, Username: "demo", Password: "secret", DomainID: "default", TenantName: "demo"}, project: "demo"},
		{name: "password with user ID and project ID",
			ao: gophercloud.AuthOptions{IdentityEndpoint: authURL, UserID: "a1a1a1a1a1a14a1a8a1a1a1a1a1a1a1a", Password: "pw", TenantID: "0f0f0f0f0f0f4f0f8f0f0f0f0f0f0f0f"}, project: "ops"},
		{name: "password in a named domain without scope gets the default project",
			ao: gophercloud.AuthOptions{IdentityEndpoint: authURL, Username: "operator", Password: "pw", DomainName: "Ops"}, project: "ops"},
		{name: "application credential by ID and secret",
			ao: gophercloud.AuthOptions{IdentityEndpoint: authURL, ApplicationCredentialID: "ac-1", ApplicationCredentialSecret: "s3cret"}, project: "demo"},
		{name: "application credential by name and user",
			ao: gophercloud.AuthOptions{IdentityEndpoint: authURL, ApplicationCredentialName: "ccm", Username: "demo", DomainName: "Default", ApplicationCredentialSecret: "s3cret"}, project: "demo"},
		{name: "a wrong password is refused",
			ao: gophercloud.AuthOptions{IdentityEndpoint: authURL, Username: "demo", Password: "nope", DomainName: "Default", TenantName: "demo"}, wantErr: true},
		{name: "a project the user has no role on is refused",
			ao: gophercloud.AuthOptions{IdentityEndpoint: authURL, Username: "demo", Password: "secret", DomainName: "Default", TenantID: "0f0f0f0f0f0f4f0f8f0f0f0f0f0f0f0f"}, wantErr: true},
		{name: "a wrong application credential secret is refused",
			ao: gophercloud.AuthOptions{IdentityEndpoint: authURL, ApplicationCredentialID: "ac-1", ApplicationCredentialSecret: "x"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc, err := openstack.AuthenticatedClient(ctxT(t), tt.ao)
			if tt.wantErr {
				if !gophercloud.ResponseCodeIs(err, 401) {
					t.Fatalf("want a 401, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("authenticate: %v", err)
			}
			res, ok := pc.GetAuthResult().(tokens.CreateResult)
			if !ok {
				t.Fatalf("auth result is %T", pc.GetAuthResult())
			}
			p, err := res.ExtractProject()
			if err != nil || p == nil || p.Name != tt.project {
				t.Fatalf("token project = %+v, %v; want %q", p, err, tt.project)
			}
			for _, nc := range []func(*gophercloud.ProviderClient, gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error){
				openstack.NewComputeV2, openstack.NewNetworkV2, openstack.NewLoadBalancerV2, openstack.NewIdentityV3,
			} {
				for _, av := range []gophercloud.Availability{gophercloud.AvailabilityPublic, gophercloud.AvailabilityInternal} {
					if _, err := nc(pc, gophercloud.EndpointOpts{Region: "RegionOne", Availability: av}); err != nil {
						t.Errorf("service client (%s): %v", av, err)
					}
				}
			}
		})
	}
}

func TestExpiredAndRevokedTokensAreRenewedByGophercloud(t *testing.T) {
	sim, authURL := startSim(t, Options{TokenTTL: 300 * time.Millisecond})
	pc := provider(t, demoAuth(authURL))
	compute, err := openstack.NewComputeV2(pc, gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil {
		t.Fatal(err)
	}
	first := pc.Token()
	if _, err := flavors.Get(ctxT(t), compute, "1").Extract(); err != nil {
		t.Fatalf("with a fresh token: %v", err)
	}
	time.Sleep(400 * time.Millisecond) // let the token expire; not polling
	if _, err := flavors.Get(ctxT(t), compute, "1").Extract(); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if pc.Token() == first {
		t.Fatal("gophercloud kept the expired token: no 401 was served")
	}
	sim.RevokeTokens()
	second := pc.Token()
	if _, err := flavors.Get(ctxT(t), compute, "1").Extract(); err != nil {
		t.Fatalf("after revocation: %v", err)
	}
	if pc.Token() == second {
		t.Fatal("gophercloud kept the revoked token")
	}
	if n := sim.Calls()["identity.tokens.create"]; n != 3 {
		t.Fatalf("identity.tokens.create called %d times, want 3", n)
	}
}

// TestATokenIsRescopedWithTheTokenMethod: Keystone's "token" method (what
// a client configured with only a token sends, and how it renews it)
// gives a token of the same user scoped as asked, expiring when the
// presented one does (Keystone never extends a token by re-scoping it); a
// token Keystone does not know or that has expired is "Could not find
// token", a 404.
func TestATokenIsRescopedWithTheTokenMethod(t *testing.T) {
	_, authURL := startSim(t, Options{TokenTTL: 500 * time.Millisecond})
	user := provider(t, demoAuth(authURL))
	userToken, err := user.GetAuthResult().(tokens.CreateResult).ExtractToken()
	if err != nil {
		t.Fatal(err)
	}
	rescope := func(id string) (*gophercloud.ProviderClient, error) {
		return openstack.AuthenticatedClient(ctxT(t), gophercloud.AuthOptions{IdentityEndpoint: authURL, TokenID: id,
			Scope: &gophercloud.AuthScope{ProjectName: "demo", DomainName: "Default"}})
	}

	pc, err := rescope(user.Token())
	if err != nil {
		t.Fatalf("token method: %v", err)
	}
	res := pc.GetAuthResult().(tokens.CreateResult)
	got, err := res.ExtractToken()
	if err != nil {
		t.Fatal(err)
	}
	if pc.Token() == user.Token() || !got.ExpiresAt.Equal(userToken.ExpiresAt) {
		t.Errorf("re-scoped token %s expiring %s; want a new token expiring with the presented one, %s", pc.Token(), got.ExpiresAt, userToken.ExpiresAt)
	}
	if p, err := res.ExtractProject(); err != nil || p == nil || p.Name != "demo" {
		t.Errorf("project = %+v, %v; want demo", p, err)
	}
	if u, err := res.ExtractUser(); err != nil || u.Name != "demo" {
		t.Errorf("user = %+v, %v; want demo", u, err)
	}
	if _, err := rescope("gAAAAAB-unknown"); !gophercloud.ResponseCodeIs(err, 404) {
		t.Errorf("an unknown token: %v, want a 404", err)
	}
	time.Sleep(time.Until(userToken.ExpiresAt) + 50*time.Millisecond) // let it expire; not polling
	if _, err := rescope(user.Token()); !gophercloud.ResponseCodeIs(err, 404) {
		t.Errorf("an expired token: %v, want a 404", err)
	}
}
