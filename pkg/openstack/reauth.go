package openstack

import (
	"context"
	"errors"
	"fmt"

	gophers "github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/stackward/stackward/pkg/config"
)

// Reauthenticate switches the clients to new credentials of [Global] (a
// rotated password or application credential in the mounted cloud.conf
// Secret) without a restart. The new credentials are tried first on a
// client of their own, so that credentials Keystone refuses, or that name
// another project, change nothing; then the clients' provider takes a
// token with them, and re-authenticates with them when that token expires
// or is revoked. A new auth-url, region or endpoint type needs a restart
// (the service endpoints come from the catalog found at start).
func (c *Clients) Reauthenticate(ctx context.Context, old, g config.Global) error {
	if c.Provider == nil {
		return errors.New("no OpenStack provider client to re-authenticate")
	}
	if g.AuthURL != old.AuthURL || g.Region != old.Region || g.EndpointType != old.EndpointType {
		return errors.New("[Global] auth-url, region or endpoint-type changed: restart to use them")
	}
	probe, err := gophers.NewClient(g.AuthURL)
	if err != nil {
		return fmt.Errorf("openstack client for %q: %w", g.AuthURL, err)
	}
	probe.HTTPClient = c.Provider.HTTPClient
	opts := AuthOptions(g)
	opts.AllowReauth = false
	if err := c.Caller.Do(ctx, ServiceIdentity, "authenticate", func(ctx context.Context) error {
		return gophers.Authenticate(ctx, probe, opts)
	}); err != nil {
		return fmt.Errorf("authenticate to %s with the new credentials (the old ones stay in use): %w", g.AuthURL, err)
	}
	if p := authProject(probe); p != c.ProjectID {
		return fmt.Errorf("the new credentials are scoped to project %q, not %q: restart to change projects (the old credentials stay in use)", p, c.ProjectID)
	}
	if err := c.Caller.Do(ctx, ServiceIdentity, "authenticate", func(ctx context.Context) error {
		return gophers.Authenticate(ctx, c.Provider, AuthOptions(g))
	}); err != nil {
		return fmt.Errorf("authenticate to %s with the new credentials: %w", g.AuthURL, err)
	}
	return nil
}
