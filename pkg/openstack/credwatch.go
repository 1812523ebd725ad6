package openstack

import (
	"context"
	"errors"
	"reflect"
	"time"

	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/config"
)

// CredentialsPollPeriod is how often the cloud.conf is read again for new
// credentials. The kubelet updates a mounted Secret within about a minute;
// reading a few small files every ten seconds costs nothing. Polling the
// content rather than watching inotify events survives the kubelet's
// symlink swap of a Secret volume.
const CredentialsPollPeriod = 10 * time.Second

// Refused credentials are tried again after refusedRetryMin, doubling up to
// refusedRetryMax. Retrying at all lets a rotation done in the "wrong"
// order recover without a restart: the Secret updated before Keystone knows
// the new password or application credential, then the old one revoked.
// Retrying slowly, a few tries in the first hour and then one an hour,
// keeps a wrong password from quickly reaching Keystone's lockout
// (lockout_failure_attempts locks the user out, old password included) and
// from filling the log every poll. A transient failure is no answer about
// the credentials and is retried at every poll instead.
const (
	refusedRetryMin = 5 * time.Minute
	refusedRetryMax = time.Hour
)

// CredentialWatch re-reads a cloud config and, when its [Global]
// credentials changed, switches the clients to them (Reauthenticate) so
// that a rotated password or application credential, or a fresh token
// replacing one about to expire, works without a restart, in the CCM and
// in the approver alike. Until the new credentials
// work, the old ones stay in use. New credentials Keystone refuses (or that
// need a restart) are tried again only after a backoff; any other failure,
// a Keystone outage say, leaves them pending and they are tried again at
// the next check. An unreadable config changes nothing.
type CredentialWatch struct {
	path    string
	clients *Clients
	current config.Global
	// refused is the last new [Global] refused for good, refusals how many
	// times in a row, and retryAt when it is tried again.
	refused  *config.Global
	refusals int
	retryAt  time.Time
	now      func() time.Time
}

// NewCredentialWatch watches path for the clients, which were made with
// the [Global] section current.
func NewCredentialWatch(path string, clients *Clients, current config.Global) *CredentialWatch {
	return &CredentialWatch{path: path, clients: clients, current: current, now: time.Now}
}

// Check reads the config once; it reports whether the clients now use new
// credentials.
func (w *CredentialWatch) Check(ctx context.Context) bool {
	logger := klog.FromContext(ctx).WithValues("cloudConfig", w.path)
	cfg, _, err := config.Load(w.path)
	if err != nil {
		logger.V(2).Info("Cloud config unreadable; keeping the credentials in use", "err", err)
		return false
	}
	g := cfg.Global
	if reflect.DeepEqual(g, w.current) {
		return false
	}
	again := w.refused != nil && reflect.DeepEqual(g, *w.refused)
	if again && w.now().Before(w.retryAt) {
		return false
	}
	err = w.clients.Reauthenticate(ctx, w.current, g)
	switch {
	case err == nil:
		w.current, w.refused, w.refusals = g, nil, 0
		logger.Info("Re-authenticated with the new credentials of the cloud config")
		return true
	case errors.Is(err, ErrCredentialsRefused):
		if !again {
			w.refusals = 0
		}
		w.refused = &g
		w.refusals++
		wait := refusedBackoff(w.refusals)
		w.retryAt = w.now().Add(wait)
		logger.Error(err, "New credentials in the cloud config refused; the old ones stay in use", "retryIn", wait)
	default:
		logger.Error(err, "New credentials in the cloud config not used yet: the re-authentication failed transiently; the old ones stay in use and the new ones are tried again at the next check")
	}
	return false
}

// refusedBackoff is the wait after the nth refusal in a row of the same
// credentials.
func refusedBackoff(n int) time.Duration {
	wait := refusedRetryMin
	for i := 1; i < n && wait < refusedRetryMax; i++ {
		wait *= 2
	}
	return min(wait, refusedRetryMax)
}

// Run checks every period until ctx ends. Ticks missed during a long check
// (a slow Keystone) are dropped, so checks never pile up.
func (w *CredentialWatch) Run(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.Check(ctx)
		}
	}
}
