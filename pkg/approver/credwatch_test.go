package approver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"

	"github.com/stackward/stackward/internal/cloudsim"
)

// TestTheApproverTakesRotatedCredentialsWithoutARestart: the approver's own
// credential (its cloud.conf Secret) is rotated as an operator rotates an
// application credential; without a restart every decision would stay
// "could not tell" (pending) from then on.
func TestTheApproverTakesRotatedCredentialsWithoutARestart(t *testing.T) {
	seed := cloudsim.DefaultSeed()
	seed.Servers = []cloudsim.ServerSpec{
		{Name: "node-1", Flavor: "m1.small", NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: "10.0.0.11"}}},
	}
	sim, err := cloudsim.New(cloudsim.Options{Seed: seed, RandSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	authURL, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	conf := filepath.Join(t.TempDir(), "cloud.conf")
	write := func(password string) {
		t.Helper()
		// As the kubelet updates a Secret volume: a new file swapped in.
		body := fmt.Sprintf("[Global]\nauth-url=%s\nusername=demo\npassword=%s\ndomain-name=Default\ntenant-name=demo\n", authURL, password)
		if err := os.WriteFile(conf+".new", []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(conf+".new", conf); err != nil {
			t.Fatal(err)
		}
	}
	write("secret")
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cfg := Config{CloudConfig: conf}
	cloud, err := buildCloud(ctx, &cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	lookup := func() error {
		_, err := cloud.InstanceForNode(ctx, "", "node-1", nil)
		return err
	}
	if err := lookup(); err != nil {
		t.Fatalf("lookup with the first password: %v", err)
	}
	if err := sim.SetPassword("demo", "rotated"); err != nil {
		t.Fatal(err)
	}
	if err := lookup(); err == nil {
		t.Fatal("a lookup with a revoked token and the old password succeeded: the test would prove nothing")
	}
	write("rotated")
	// The file is read again every CredentialsPollPeriod (10 s).
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 40*time.Second, true, func(context.Context) (bool, error) {
		last = lookup()
		return last == nil, nil
	}); err != nil {
		t.Fatalf("the rotated password was not taken without a restart: %v (last lookup: %v)", err, last)
	}
}
