package capi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
)

const simProjectID = "9f2c6d1e4b8a4c7e8d3f2a1b0c9d8e7f"

// capoCloudConf is cloud.conf as CAPO's templates/create_cloud_conf.sh (and
// env.rc's OPENSTACK_CLOUD_PROVIDER_CONF_B64) writes it from a clouds.yaml
// entry: a [Global] section, auth-url unquoted, every other key quoted,
// one line each in the script's order, for the keys the entry has.
func capoCloudConf(authURL string, keys ...[2]string) string {
	var b strings.Builder
	b.WriteString("[Global]\nauth-url=" + authURL + "\n")
	for _, kv := range keys {
		b.WriteString(kv[0] + "=\"" + kv[1] + "\"\n")
	}
	return b.String()
}

// TestCAPOCloudConfAuthenticates: the cloud.conf CAPO's generator writes,
// byte for byte, which the workload cluster holds as kube-system/cloud-config
// (key cloud.conf) and the chart mounts as it is, parses with Stackward's
// parser (no warning) and authenticates against the simulator's Keystone,
// scoped to the project it names.
func TestCAPOCloudConfAuthenticates(t *testing.T) {
	seed := cloudsim.DefaultSeed()
	seed.Projects = []cloudsim.SeedProject{{Name: "demo", ID: simProjectID}}
	seed.ApplicationCredentials = []cloudsim.SeedAppCred{{ID: "2b1f0e9d8c7b", Name: "capo", Secret: "ac-s3cret", User: "demo"}}
	sim, err := cloudsim.New(cloudsim.Options{Seed: seed, RandSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	authURL, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)

	for _, tc := range []struct {
		name string
		conf string
	}{
		{"a password clouds.yaml entry (project id and name, user domain)", capoCloudConf(authURL,
			[2]string{"username", "demo"}, [2]string{"password", "secret"},
			[2]string{"tenant-id", simProjectID}, [2]string{"tenant-name", "demo"},
			[2]string{"domain-name", "Default"}, [2]string{"region", "RegionOne"})},
		{"an application credential clouds.yaml entry", capoCloudConf(authURL,
			[2]string{"region", "RegionOne"},
			[2]string{"application-credential-name", "capo"}, [2]string{"application-credential-id", "2b1f0e9d8c7b"},
			[2]string{"application-credential-secret", "ac-s3cret"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, warnings, err := config.Read("cloud.conf", strings.NewReader(tc.conf))
			if err != nil {
				t.Fatalf("parse:\n%s\n%v", tc.conf, err)
			}
			for _, w := range warnings {
				t.Errorf("warning: %v", w)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := openstack.NewClients(ctx, cfg, openstack.ClientOptions{HTTPTimeout: 5 * time.Second,
				Retry: openstack.RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}})
			if err != nil {
				t.Fatalf("authenticate: %v", err)
			}
			if c.ProjectID != simProjectID {
				t.Errorf("token scoped to project %q, want %q", c.ProjectID, simProjectID)
			}
		})
	}
}
