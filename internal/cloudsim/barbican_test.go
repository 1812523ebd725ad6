package cloudsim

import (
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/containers"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
)

func keyManager(t *testing.T, ao gophercloud.AuthOptions) *gophercloud.ServiceClient {
	t.Helper()
	c, err := openstack.NewKeyManagerV1(provider(t, ao), gophercloudRegion())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// certContainer stores a certificate and its key in Barbican and returns
// the certificate container's reference.
func certContainer(t *testing.T, km *gophercloud.ServiceClient, name string) string {
	t.Helper()
	ctx := ctxT(t)
	var refs []containers.SecretRef
	for _, part := range []string{"certificate", "private_key"} {
		s, err := secrets.Create(ctx, km, secrets.CreateOpts{Name: name + "-" + part, SecretType: secrets.OpaqueSecret,
			Payload: "-----BEGIN " + part + "-----", PayloadContentType: "text/plain"}).Extract()
		if err != nil {
			t.Fatalf("create secret %s: %v", part, err)
		}
		refs = append(refs, containers.SecretRef{Name: part, SecretRef: s.SecretRef})
	}
	c, err := containers.Create(ctx, km, containers.CreateOpts{Type: containers.CertificateContainer, Name: name, SecretRefs: refs}).Extract()
	if err != nil {
		t.Fatalf("create container: %v", err)
	}
	return c.ContainerRef
}

func TestBarbicanSecretsAndContainers(t *testing.T) {
	sim, authURL := startSim(t, Options{Seed: rolesSeed()})
	km := keyManager(t, demoAuth(authURL))
	reader := keyManager(t, gophercloud.AuthOptions{IdentityEndpoint: authURL, ApplicationCredentialID: "ac-ro", ApplicationCredentialSecret: "ro-secret"})
	other := keyManager(t, gophercloud.AuthOptions{IdentityEndpoint: authURL, Username: "ops", Password: "ops-secret",
		DomainName: "Default", TenantName: "ops"})
	ctx := ctxT(t)
	ref := certContainer(t, km, "web-tls")
	id := ref[len(ref)-36:]

	t.Run("a container reads back with its secrets by name", func(t *testing.T) {
		c, err := containers.Get(ctx, km, id).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if c.ContainerRef != ref || c.Type != "certificate" || c.Status != "ACTIVE" || len(c.SecretRefs) != 2 ||
			c.SecretRefs[0].Name != "certificate" || c.Created.IsZero() {
			t.Fatalf("container = %+v", c)
		}
		s, err := secrets.Get(ctx, km, c.SecretRefs[0].SecretRef[len(c.SecretRefs[0].SecretRef)-36:]).Extract()
		if err != nil || s.Name != "web-tls-certificate" || s.SecretType != "opaque" || s.ContentTypes["default"] != "text/plain" {
			t.Fatalf("secret = %+v, %v", s, err)
		}
	})
	t.Run("lists are project-scoped and counted", func(t *testing.T) {
		pages, err := secrets.List(km, secrets.ListOpts{}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ss, _ := secrets.ExtractSecrets(pages); len(ss) != 2 {
			t.Fatalf("demo sees %d secrets, want 2", len(ss))
		}
		pages, err = containers.List(other, containers.ListOpts{}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cs, _ := containers.ExtractContainers(pages); len(cs) != 0 {
			t.Fatalf("another project sees %d containers", len(cs))
		}
	})
	t.Run("another project gets a 404, a reader reads but cannot write", func(t *testing.T) {
		if _, err := containers.Get(ctx, other, id).Extract(); !gophercloud.ResponseCodeIs(err, 404) {
			t.Fatalf("other project: want 404, got %v", err)
		}
		if _, err := containers.Get(ctx, reader, id).Extract(); err != nil {
			t.Fatalf("reader get: %v", err)
		}
		_, err := secrets.Create(ctx, reader, secrets.CreateOpts{Name: "x", Payload: "p", PayloadContentType: "text/plain"}).Extract()
		if !gophercloud.ResponseCodeIs(err, 403) {
			t.Fatalf("reader create: want 403, got %v", err)
		}
	})
	t.Run("a certificate container needs a certificate secret that exists", func(t *testing.T) {
		_, err := containers.Create(ctx, km, containers.CreateOpts{Type: containers.CertificateContainer, Name: "empty"}).Extract()
		if !gophercloud.ResponseCodeIs(err, 400) {
			t.Fatalf("no certificate: want 400, got %v", err)
		}
		_, err = containers.Create(ctx, km, containers.CreateOpts{Type: containers.GenericContainer,
			SecretRefs: []containers.SecretRef{{Name: "x", SecretRef: ref[:len(ref)-46] + "/secrets/00000000-0000-0000-0000-000000000000"}}}).Extract()
		if !gophercloud.ResponseCodeIs(err, 404) {
			t.Fatalf("missing secret: want 404, got %v", err)
		}
	})
	t.Run("deleting removes it and counts a call", func(t *testing.T) {
		tmp := certContainer(t, km, "tmp")
		before := sim.Calls()["key-manager.containers.delete"]
		if err := containers.Delete(ctx, km, tmp[len(tmp)-36:]).ExtractErr(); err != nil {
			t.Fatal(err)
		}
		if _, err := containers.Get(ctx, km, tmp[len(tmp)-36:]).Extract(); !gophercloud.ResponseCodeIs(err, 404) {
			t.Fatalf("after delete: want 404, got %v", err)
		}
		if got := sim.Calls()["key-manager.containers.delete"] - before; got != 1 {
			t.Fatalf("counted %d delete calls", got)
		}
	})
}

func TestTerminatedHTTPSListenersAndInsertHeaders(t *testing.T) {
	env := newLBEnv(t, Options{})
	authURL := env.lb.ProviderClient.IdentityEndpoint
	ctx := ctxT(t)
	km := keyManager(t, demoAuth(authURL))
	ref := certContainer(t, km, "web-tls")
	create := func(l listeners.CreateOpts) (*loadbalancers.LoadBalancer, error) {
		return loadbalancers.Create(ctx, env.lb, loadbalancers.CreateOpts{Name: "tls", VipSubnetID: env.subnetID,
			Listeners: []listeners.CreateOpts{l}}).Extract()
	}
	httpPool := &pools.CreateOpts{Protocol: pools.ProtocolHTTP, LBMethod: pools.LBMethodRoundRobin}
	refused := []struct {
		name string
		opts listeners.CreateOpts
	}{
		{"TERMINATED_HTTPS without a certificate", listeners.CreateOpts{Protocol: listeners.ProtocolTerminatedHTTPS, ProtocolPort: 443}},
		{"TERMINATED_HTTPS with a container that does not exist", listeners.CreateOpts{Protocol: listeners.ProtocolTerminatedHTTPS, ProtocolPort: 443,
			DefaultTlsContainerRef: ref[:len(ref)-36] + "00000000-0000-0000-0000-000000000000"}},
		{"a certificate on a TCP listener", listeners.CreateOpts{Protocol: listeners.ProtocolTCP, ProtocolPort: 443, DefaultTlsContainerRef: ref}},
		{"insert_headers on a TCP listener", listeners.CreateOpts{Protocol: listeners.ProtocolTCP, ProtocolPort: 80,
			InsertHeaders: map[string]string{"X-Forwarded-For": "true"}}},
		{"an X-Forwarded-For that is not a boolean", listeners.CreateOpts{Protocol: listeners.ProtocolHTTP, ProtocolPort: 80,
			InsertHeaders: map[string]string{"X-Forwarded-For": "yes please"}}},
		{"a TCP pool behind an HTTP listener", listeners.CreateOpts{Protocol: listeners.ProtocolHTTP, ProtocolPort: 80,
			DefaultPool: &pools.CreateOpts{Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin}}},
	}
	for _, tc := range refused {
		t.Run(tc.name+" is a 400 and creates nothing", func(t *testing.T) {
			if _, err := create(tc.opts); !gophercloud.ResponseCodeIs(err, 400) {
				t.Fatalf("want 400, got %v", err)
			}
			pages, err := loadbalancers.List(env.lb, loadbalancers.ListOpts{Name: "tls"}).AllPages(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if lbs, _ := loadbalancers.ExtractLoadBalancers(pages); len(lbs) != 0 {
				t.Fatalf("%d load balancers left behind", len(lbs))
			}
		})
	}

	lb, err := create(listeners.CreateOpts{Protocol: listeners.ProtocolTerminatedHTTPS, ProtocolPort: 443, DefaultTlsContainerRef: ref,
		InsertHeaders: map[string]string{"X-Forwarded-For": "true", "X-Forwarded-Proto": "true"}, DefaultPool: httpPool})
	if err != nil {
		t.Fatal(err)
	}
	waitLB(t, env.lb, lb.ID, "ACTIVE")
	l, err := listeners.Get(ctx, env.lb, lb.Listeners[0].ID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the listener shows its certificate reference and headers", func(t *testing.T) {
		if l.Protocol != "TERMINATED_HTTPS" || l.DefaultTlsContainerRef != ref || l.InsertHeaders["X-Forwarded-For"] != "true" ||
			l.InsertHeaders["X-Forwarded-Proto"] != "true" {
			t.Fatalf("listener = %+v", l)
		}
	})
	t.Run("an update swaps the certificate and the headers in place", func(t *testing.T) {
		ref2 := certContainer(t, km, "web-tls-2")
		headers := map[string]string{"X-Forwarded-For": "false"}
		if _, err := listeners.Update(ctx, env.lb, l.ID, listeners.UpdateOpts{DefaultTlsContainerRef: &ref2, InsertHeaders: &headers}).Extract(); err != nil {
			t.Fatal(err)
		}
		waitLB(t, env.lb, lb.ID, "ACTIVE")
		got, err := listeners.Get(ctx, env.lb, l.ID).Extract()
		if err != nil || got.DefaultTlsContainerRef != ref2 || len(got.InsertHeaders) != 1 || got.InsertHeaders["X-Forwarded-For"] != "false" {
			t.Fatalf("after update: %+v, %v", got, err)
		}
	})
	t.Run("an update to a certificate of another project is a 400", func(t *testing.T) {
		other := keyManager(t, gophercloud.AuthOptions{IdentityEndpoint: authURL, Username: "operator", Password: "pw",
			DomainName: "Ops", TenantName: "ops"})
		foreign := certContainer(t, other, "foreign")
		_, err := listeners.Update(ctx, env.lb, l.ID, listeners.UpdateOpts{DefaultTlsContainerRef: &foreign}).Extract()
		if !gophercloud.ResponseCodeIs(err, 400) {
			t.Fatalf("want 400, got %v", err)
		}
	})
}
