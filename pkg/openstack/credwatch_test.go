package openstack_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
)

// rotation is a CCM's clients and credential watch on a cloudsim, made
// with user demo's password "secret" in a cloud.conf the test rewrites as
// the kubelet updates a Secret volume.
type rotation struct {
	sim     *cloudsim.Sim
	cfg     *config.Config
	clients *openstack.Clients
	watch   *openstack.CredentialWatch
	// write puts a cloud.conf with password into place.
	write func(password string)
	// call is any cloud call with the clients.
	call func() error
}

// newRotation makes a rotation whose clients give up on a request after
// httpTimeout and never retry one: each Check asks Keystone at most once
// per token request, so a fault lasts exactly the checks it is meant to.
func newRotation(ctx context.Context, t *testing.T, httpTimeout time.Duration) *rotation {
	t.Helper()
	sim, err := cloudsim.New(cloudsim.Options{Seed: cloudsim.DefaultSeed(), RandSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	authURL, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	path := filepath.Join(t.TempDir(), "cloud.conf")
	write := func(password string) {
		t.Helper()
		conf := fmt.Sprintf("[Global]\nauth-url = %s\nusername = demo\npassword = %s\ndomain-name = Default\ntenant-name = demo\n", authURL, password)
		// As the kubelet updates a Secret volume: a new file swapped in.
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("secret")
	cfg, _, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := openstack.NewClients(ctx, cfg, openstack.ClientOptions{HTTPTimeout: httpTimeout,
		Retry: openstack.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	call := func() error {
		_, err := clients.Compute.ListServers(ctx, openstack.ListServersOpts{})
		return err
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	return &rotation{sim: sim, cfg: cfg, clients: clients, watch: openstack.NewCredentialWatch(path, clients, cfg.Global),
		write: write, call: call}
}

func TestRotatedPasswordIsUsedWithoutARestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := newRotation(ctx, t, 5*time.Second)
	sim, cfg, clients, w, write, call := r.sim, r.cfg, r.clients, r.watch, r.write, r.call

	t.Run("an unchanged config changes nothing", func(t *testing.T) {
		if w.Check(ctx) {
			t.Error("re-authenticated without a change")
		}
	})
	t.Run("a password changed in Keystone (its tokens revoked) and in the config is used by the next call", func(t *testing.T) {
		if err := sim.SetPassword("demo", "rotated"); err != nil {
			t.Fatal(err)
		}
		if err := call(); err == nil {
			t.Fatal("a call with a revoked token and the old password succeeded: the test would prove nothing")
		}
		write("rotated")
		if !w.Check(ctx) {
			t.Fatal("the new password was not taken")
		}
		if err := call(); err != nil {
			t.Fatalf("call with the new password: %v", err)
		}
	})
	t.Run("the old password is refused by Keystone", func(t *testing.T) {
		old := cfg.Global
		if err := clients.Reauthenticate(ctx, old, old); err == nil {
			t.Error("the old password still authenticates")
		}
	})
	t.Run("a wrong password in the config is refused once and the working credentials stay in use", func(t *testing.T) {
		write("typo")
		if first, second := w.Check(ctx), w.Check(ctx); first || second {
			t.Error("a refused password was taken")
		}
		sim.RevokeTokens() // the next call must re-authenticate, with the working password
		if err := call(); err != nil {
			t.Fatalf("call after a refused rotation: %v", err)
		}
	})
	t.Run("a changed auth-url needs a restart and changes nothing", func(t *testing.T) {
		g := cfg.Global
		g.AuthURL += "/other"
		if err := clients.Reauthenticate(ctx, cfg.Global, g); err == nil {
			t.Error("a new auth-url was accepted")
		}
	})
}

// tokenRequests counts Keystone's token requests from the moment it is
// called; it must be the first fault rule of the sim.
func tokenRequests(t *testing.T, sim *cloudsim.Sim) func() int {
	t.Helper()
	if err := sim.SetFault(cloudsim.FaultRule{Service: cloudsim.ServiceIdentity, Operation: "tokens.create"}); err != nil {
		t.Fatal(err)
	}
	return func() int { return sim.FaultUses()[0] }
}

func TestNewCredentialsAreTriedAgainAfterATransientKeystoneFailure(t *testing.T) {
	tokensCreate := func(f cloudsim.FaultRule) cloudsim.FaultRule {
		f.Service, f.Operation = cloudsim.ServiceIdentity, "tokens.create"
		return f
	}
	tests := []struct {
		name string
		// fault answers the new credentials' first token requests, one a
		// check, for fault.Times checks.
		fault cloudsim.FaultRule
	}{
		{"a Keystone answering 503 for three checks", tokensCreate(cloudsim.FaultRule{Status: http.StatusServiceUnavailable, Times: 3})},
		{"a proxy in front of Keystone answering 500", tokensCreate(cloudsim.FaultRule{Status: http.StatusInternalServerError, NoRequestID: true, Times: 1})},
		{"a Keystone rate-limiting the token requests (429)", tokensCreate(cloudsim.FaultRule{Status: http.StatusTooManyRequests, Times: 2})},
		{"a Keystone hanging past the client's timeout", tokensCreate(cloudsim.FaultRule{Hang: true, Times: 1})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r := newRotation(ctx, t, time.Second)
			// The rotation in its worst order: Keystone first, which revokes
			// the old password's tokens; only the new password can work.
			if err := r.sim.SetPassword("demo", "rotated"); err != nil {
				t.Fatal(err)
			}
			if err := r.call(); err == nil {
				t.Fatal("a call with a revoked token and the old password succeeded: the test would prove nothing")
			}
			requests := tokenRequests(t, r.sim)
			if err := r.sim.SetFault(tc.fault); err != nil {
				t.Fatal(err)
			}
			r.write("rotated")

			for i := range tc.fault.Times {
				if r.watch.Check(ctx) {
					t.Fatalf("check %d used the new password while Keystone failed", i+1)
				}
			}
			if got := requests(); got != tc.fault.Times {
				t.Fatalf("%d token requests in %d checks during the fault, want one a check", got, tc.fault.Times)
			}
			if !r.watch.Check(ctx) {
				t.Fatal("the new password was not used once Keystone answered again: a transient failure was taken for a refusal")
			}
			if err := r.call(); err != nil {
				t.Fatalf("call with the new password: %v", err)
			}
			if r.watch.Check(ctx) {
				t.Error("re-authenticated again with credentials already in use")
			}
		})
	}
}

func TestRefusedCredentialsAreTriedAgainOnlyAfterABackoff(t *testing.T) {
	tests := []struct {
		name     string
		password string // in the new config
		// fault answers the new password's first token request instead of
		// Keystone's own check of the password.
		fault *cloudsim.FaultRule
		// keystoneLearns sets the new password in Keystone after it was
		// refused: the operator's fix, Keystone side.
		keystoneLearns bool
	}{
		{name: "a wrong password (401) is refused and the old password keeps working", password: "typo"},
		{name: "a 403 from Keystone is a refusal like a wrong password", password: "typo",
			fault: &cloudsim.FaultRule{Service: cloudsim.ServiceIdentity, Operation: "tokens.create", Status: http.StatusForbidden, Times: 1}},
		{name: "a password Keystone learns after the config is used once the backoff has passed", password: "later", keystoneLearns: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r := newRotation(ctx, t, 5*time.Second)
			now := time.Now()
			r.watch.SetClock(func() time.Time { return now })
			requests := tokenRequests(t, r.sim)
			if tc.fault != nil {
				if err := r.sim.SetFault(*tc.fault); err != nil {
					t.Fatal(err)
				}
			}
			r.write(tc.password)

			if first, second := r.watch.Check(ctx), r.watch.Check(ctx); first || second {
				t.Fatal("refused credentials were taken")
			}
			if got := requests(); got != 1 {
				t.Fatalf("%d token requests in two checks, want 1: refused credentials are not tried at every check", got)
			}
			r.sim.RevokeTokens() // the next call must re-authenticate, with the old password
			if err := r.call(); err != nil {
				t.Fatalf("call with the old password after a refusal: %v", err)
			}
			if tc.keystoneLearns {
				if err := r.sim.SetPassword("demo", tc.password); err != nil {
					t.Fatal(err)
				}
			}
			before := requests()
			now = now.Add(time.Minute)
			if r.watch.Check(ctx) || requests() != before {
				t.Fatal("refused credentials were tried again a minute later")
			}

			now = now.Add(time.Hour)
			if got := r.watch.Check(ctx); got != tc.keystoneLearns {
				t.Fatalf("check after the backoff used the new password: %v, want %v", got, tc.keystoneLearns)
			}
			want := 1 // refused again
			if tc.keystoneLearns {
				want = 2 // the probe's and then the clients' own
			}
			if got := requests() - before; got != want {
				t.Fatalf("%d token requests after the backoff, want %d", got, want)
			}
			if err := r.call(); err != nil {
				t.Fatalf("call after the backoff: %v", err)
			}
		})
	}
}
