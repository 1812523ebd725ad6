package openstack_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gophers "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
)

// userToken is what a user hands the CCM with [Global] token: a token of
// their own (here demo's, by password), and when it expires.
func userToken(ctx context.Context, t *testing.T, authURL string) (string, time.Time) {
	t.Helper()
	pc, err := gophers.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: authURL,
		Username: "demo", Password: "secret", DomainName: "Default", TenantName: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := pc.GetAuthResult().(tokens.CreateResult).ExtractToken()
	if err != nil {
		t.Fatal(err)
	}
	return pc.Token(), tok.ExpiresAt
}

// untilExpired waits for a token's expiry; a token cannot be made to expire
// sooner, and there is nothing to poll.
func untilExpired(expires time.Time) { time.Sleep(time.Until(expires) + 100*time.Millisecond) }

// TestATokenInTheCloudConfigWorksUntilItExpiresOrIsReplaced: a cloud.conf
// with [Global] token (upstream PR 2964) authenticates by re-scoping the
// token to the project; a new token written into the file is taken without
// a restart; once the token in use expires every call fails, and never as
// "not found".
func TestATokenInTheCloudConfigWorksUntilItExpiresOrIsReplaced(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ttl = 2 * time.Second
	sim, err := cloudsim.New(cloudsim.Options{Seed: simSeed(), RandSeed: 1, TokenTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	authURL, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	path := filepath.Join(t.TempDir(), "cloud.conf")
	write := func(token string) {
		t.Helper()
		conf := fmt.Sprintf("[Global]\nauth-url = %s\ntoken = %s\ntenant-name = demo\ndomain-name = Default\n", authURL, token)
		tmp := path + ".new" // swapped in, as the kubelet updates a Secret volume
		if err := os.WriteFile(tmp, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}

	first, firstExpires := userToken(ctx, t, authURL)
	write(first)
	cfg, _, err := config.Load(path)
	if err != nil {
		t.Fatalf("a cloud.conf with a token: %v", err)
	}
	clients, err := openstack.NewClients(ctx, cfg, openstack.ClientOptions{HTTPTimeout: 5 * time.Second, Retry: openstack.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatalf("NewClients with a token: %v", err)
	}
	listed, err := clients.Compute.ListServers(ctx, openstack.ListServersOpts{})
	if err != nil || len(listed) != 3 {
		t.Fatalf("servers with the token: %d, %v; want the project's 3", len(listed), err)
	}
	if clients.ProjectID == "" {
		t.Error("the token was not re-scoped to a project")
	}
	serverID := listed[0].ID
	get := func() error {
		_, err := clients.Compute.GetServer(ctx, serverID)
		return err
	}
	w := openstack.NewCredentialWatch(path, clients, cfg.Global)
	var secondExpires time.Time

	t.Run("a new token written before the old one expires is used after that expiry", func(t *testing.T) {
		time.Sleep(ttl / 2) // so that the new token outlives the old one by that much
		second, expires := userToken(ctx, t, authURL)
		secondExpires = expires
		write(second)
		if !w.Check(ctx) {
			t.Fatal("the new token was not taken")
		}
		untilExpired(firstExpires)
		if err := get(); err != nil {
			t.Fatalf("after the first token expired: %v", err)
		}
	})
	t.Run("once the token in use expired every call fails, and not as not found", func(t *testing.T) {
		// The second token's own expiry, not the first's plus ttl/2: on a
		// loaded machine it was issued later than planned.
		untilExpired(secondExpires)
		err := get()
		if err == nil {
			t.Fatal("a call with an expired token succeeded")
		}
		if openstack.IsNotFound(err) {
			t.Fatalf("an expired token made an existing server not found: %v", err)
		}
		if w.Check(ctx) {
			t.Error("the unchanged cloud config re-authenticated")
		}
	})
	t.Run("an expired token written into the cloud config is refused", func(t *testing.T) {
		old := cfg.Global
		old.Token = first
		if err := clients.Reauthenticate(ctx, cfg.Global, old); !errors.Is(err, openstack.ErrCredentialsRefused) {
			t.Errorf("re-authenticating with an expired token: %v, want ErrCredentialsRefused", err)
		}
	})
	t.Run("a fresh token written after the expiry restores the calls", func(t *testing.T) {
		third, _ := userToken(ctx, t, authURL)
		write(third)
		if !w.Check(ctx) {
			t.Fatal("the fresh token was not taken")
		}
		if err := get(); err != nil {
			t.Fatalf("with the fresh token: %v", err)
		}
	})
}

func TestAnExpiredTokenAtStartIsNamed(t *testing.T) {
	sim, err := cloudsim.New(cloudsim.Options{Seed: simSeed(), RandSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	authURL, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	cfg := config.Defaults()
	cfg.Global = config.Global{AuthURL: authURL, Token: "gAAAAAB-revoked", TenantName: "demo", DomainName: "Default"}
	_, err = openstack.NewClients(simCtx(t), cfg, openstack.ClientOptions{HTTPTimeout: 5 * time.Second, Retry: openstack.RetryPolicy{MaxAttempts: 1}})
	if err == nil || !gophercloud.ResponseCodeIs(err, 404) {
		t.Fatalf("NewClients with an unknown token: %v, want Keystone's 404", err)
	}
	if want := "[Global] token is expired, revoked or unknown"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}
