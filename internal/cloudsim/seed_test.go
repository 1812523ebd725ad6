package cloudsim

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
)

func TestExampleSeedLoads(t *testing.T) {
	sd, err := LoadSeed("testdata/example-seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sim, err := New(Options{Seed: sd})
	if err != nil {
		t.Fatal(err)
	}
	cp, ok := sim.ServerByName("control-plane-1")
	if !ok || len(cp.Addresses) != 2 || cp.Addresses[0].IP != "10.0.0.10" || cp.Addresses[1].Type != "floating" {
		t.Fatalf("control-plane-1 = %+v", cp)
	}
	// Without a fixed IP, a port on a dual-stack network gets both families.
	w2, _ := sim.ServerByName("worker-2")
	if w2.Status != "SHUTOFF" || w2.AZ != "zone-b" || len(w2.Addresses) != 2 || w2.Addresses[1].Version != 6 {
		t.Fatalf("worker-2 = %+v", w2)
	}
}

func TestBadSeedsNameFileLineAndField(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // regexps the error must match
	}{
		{name: "an unknown field", yaml: "projects:\n  - name: demo\n    colour: blue\n",
			want: []string{`bad\.yaml:3: field projects\[0\]\.colour: unknown field "colour"`}},
		{name: "a wrong type", yaml: "flavors:\n  - name: small\n    vcpus: lots\n",
			want: []string{`bad\.yaml:3: field flavors\[0\]\.vcpus: .*lots`}},
		{name: "a dangling flavor reference", yaml: "projects: [{name: p}]\nnetworks: [{name: n, subnets: [{cidr: 10.0.0.0/24}]}]\nservers:\n  - name: s\n    flavor: huge\n",
			want: []string{`bad\.yaml:5: field servers\[0\]\.flavor: unknown flavor "huge"`}},
		{name: "several problems are reported together", yaml: "users:\n  - name: u\n    project: nope\nnetworks:\n  - name: n\n    subnets:\n      - cidr: 10.0.0.300/24\n",
			want: []string{`bad\.yaml:2: field users\[0\]\.password`, `bad\.yaml:3: field users\[0\]\.project: unknown project "nope"`, `bad\.yaml:7: field networks\[0\]\.subnets\[0\]\.cidr: invalid CIDR`}},
		{name: "a fixed IP outside the network", yaml: "projects: [{name: p}]\nnetworks: [{name: n, subnets: [{cidr: 10.0.0.0/24}]}]\nservers:\n  - name: s\n    nics:\n      - network: n\n        fixedIP: 10.9.9.9\n",
			want: []string{`bad\.yaml:7: field servers\[0\]\.nics\[0\]\.fixedIP: 10\.9\.9\.9 is in no subnet`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadSeed(path)
			if err == nil {
				t.Fatal("the seed was accepted")
			}
			for _, w := range tt.want {
				if !regexp.MustCompile(w).MatchString(err.Error()) {
					t.Errorf("error %q does not match %q", err, w)
				}
			}
		})
	}
}

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{SeedPath: "testdata/example-seed.yaml", TokenTTL: time.Minute, Out: pw})
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() {
		t.Fatal("no ready line")
	}
	ready := lines.Text()
	m := regexp.MustCompile(`^stackward-cloudsim ready auth_url=(\S+) .*network=\S+ load-balancer=\S+ image=\S+ metadata=\S+ admin=\S+`).FindStringSubmatch(ready)
	if m == nil {
		t.Fatalf("ready line = %q", ready)
	}
	var yaml strings.Builder
	for !strings.Contains(yaml.String(), "identity_api_version") && lines.Scan() {
		yaml.WriteString(lines.Text() + "\n")
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	for _, want := range []string{"auth_url: " + m[1], `username: "demo"`, `password: "secret"`, `project_name: "demo"`} {
		if !strings.Contains(yaml.String(), want) {
			t.Errorf("clouds.yaml lacks %q:\n%s", want, yaml.String())
		}
	}
	pc := provider(t, gophercloud.AuthOptions{IdentityEndpoint: m[1], Username: "demo", Password: "secret", DomainName: "Default", TenantName: "demo"})
	if pc.Token() == "" {
		t.Fatal("no token from the running simulator")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancellation")
	}
}
