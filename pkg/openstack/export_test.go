package openstack

import "time"

// SetClock replaces the watch's clock, so that a test steps past the wait
// before refused credentials are tried again.
func (w *CredentialWatch) SetClock(now func() time.Time) { w.now = now }

// SetClock replaces the cache's clock, so that a test moves time past
// the TTL.
func (c *ServerCache) SetClock(now func() time.Time) { c.servers.now = now }
