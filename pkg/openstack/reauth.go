package openstack

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	gophers "github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/stackward/stackward/pkg/config"
)

// Reauthenticate switches the clients to new credentials of [Global] (a
// rotated password, application credential or token in the mounted
// cloud.conf Secret) without a restart. The new credentials are tried first on a
// client of their own, so that credentials Keystone refuses, or that name
// another project, change nothing; then the clients' provider takes a
// token with them, and re-authenticates with them when that token expires
// or is revoked. A new auth-url, region or endpoint type needs a restart
// (the service endpoints come from the catalog found at start). An error
// wrapping ErrCredentialsRefused is a definitive no; any other error may
// pass, and the same credentials are worth another try.
func (c *Clients) Reauthenticate(ctx context.Context, old, g config.Global) error {
	if c.Provider == nil {
		return fmt.Errorf("no OpenStack provider client to re-authenticate: %w", ErrCredentialsRefused)
	}
	if g.AuthURL != old.AuthURL || g.Region != old.Region || g.EndpointType != old.EndpointType {
		return fmt.Errorf("[Global] auth-url, region or endpoint-type changed: restart to use them: %w", ErrCredentialsRefused)
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
		return fmt.Errorf("authenticate to %s with the new credentials (the old ones stay in use): %w", g.AuthURL, refusal(err, g))
	}
	if p := authProject(probe); p != c.ProjectID {
		return fmt.Errorf("the new credentials are scoped to project %q, not %q: restart to change projects (the old credentials stay in use): %w", p, c.ProjectID, ErrCredentialsRefused)
	}
	if err := c.Caller.Do(ctx, ServiceIdentity, "authenticate", func(ctx context.Context) error {
		return gophers.Authenticate(ctx, c.Provider, AuthOptions(g))
	}); err != nil {
		return fmt.Errorf("authenticate to %s with the new credentials: %w", g.AuthURL, refusal(err, g))
	}
	return nil
}

// refusal marks Keystone's definitive no (401, 403, and for a token the
// 404 "Could not find token" of an expired or revoked one) to an
// authentication with g as ErrCredentialsRefused. Everything else (5xx,
// 429, a timeout, a refused connection, an answer from a proxy...) says
// nothing about the credentials and stays unmarked, so that they are tried
// again: taking a Keystone outage for a wrong password would keep rotated
// credentials out until a restart, after the old ones are revoked.
func refusal(err error, g config.Global) error {
	if gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) || gophercloud.ResponseCodeIs(err, http.StatusForbidden) ||
		g.Token != "" && gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return fmt.Errorf("%w: %w", ErrCredentialsRefused, err)
	}
	return err
}
