package openstack_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
)

func TestRotatedPasswordIsUsedWithoutARestart(t *testing.T) {
	sim, err := cloudsim.New(cloudsim.Options{Seed: cloudsim.DefaultSeed(), RandSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	authURL, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	dir := t.TempDir()
	path := filepath.Join(dir, "cloud.conf")
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, _, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := openstack.NewClients(ctx, cfg, openstack.ClientOptions{HTTPTimeout: 5 * time.Second,
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
	w := openstack.NewCredentialWatch(path, clients, cfg.Global)

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
		if w.Check(ctx) || w.Check(ctx) {
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
