package cloudsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// Config is the configuration of the stackward-cloudsim binary.
type Config struct {
	// SeedPath is a YAML seed file; empty means DefaultSeed.
	SeedPath string
	// Listen is the address to serve on; empty means 127.0.0.1:0.
	Listen       string
	TokenTTL     time.Duration
	OctaviaDelay time.Duration
	Latency      time.Duration
	Region       string
	// Out receives the ready line and the example clouds.yaml; nil is stdout.
	Out io.Writer
}

// Run serves a simulator until ctx is cancelled, then shuts down cleanly.
// Once listening it prints one "stackward-cloudsim ready" line with the
// endpoints, followed by a clouds.yaml that points at them.
func Run(ctx context.Context, cfg Config) error {
	out := cfg.Out
	if out == nil {
		out = os.Stdout
	}
	seed := DefaultSeed()
	if cfg.SeedPath != "" {
		var err error
		if seed, err = LoadSeed(cfg.SeedPath); err != nil {
			return err
		}
	}
	sim, err := New(Options{Seed: seed, TokenTTL: cfg.TokenTTL, OctaviaDelay: cfg.OctaviaDelay, Latency: cfg.Latency, Region: cfg.Region})
	if err != nil {
		return err
	}
	addr := cfg.Listen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	base := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "stackward-cloudsim ready auth_url=%s/v3 compute=%s%s/v2.1 network=%s%s load-balancer=%s%s image=%s%s metadata=%s/openstack admin=%s/admin/ metrics=%s/metrics region=%s\n",
		base, base, computePrefix, base, networkPrefix, base, lbPrefix, base, imagePrefix, base, base, base, sim.region)
	fmt.Fprint(out, ExampleCloudsYAML(seed, base+"/v3", sim.region))

	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve: %w", err)
		}
	}
	sim.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// ExampleCloudsYAML is a clouds.yaml for the seed's first user.
func ExampleCloudsYAML(seed *Seed, authURL, region string) string {
	if len(seed.Users) == 0 {
		return "# the seed has no users: no clouds.yaml\n"
	}
	u := seed.Users[0]
	dom := u.Domain
	if dom == "" {
		dom = "Default"
	}
	project, pdom := u.Project, "Default"
	for _, p := range seed.Projects {
		if p.Name == u.Project || p.ID == u.Project {
			project = p.Name
			if p.Domain != "" {
				pdom = p.Domain
			}
		}
	}
	return fmt.Sprintf(`# clouds.yaml
clouds:
  cloudsim:
    auth:
      auth_url: %s
      username: %q
      password: %q
      project_name: %q
      user_domain_name: %q
      project_domain_name: %q
    region_name: %s
    interface: public
    identity_api_version: 3
`, authURL, u.Name, u.Password, project, dom, pdom, region)
}
