package openstack

import (
	"context"
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

// CredentialWatch re-reads a cloud config and, when its [Global]
// credentials changed, switches the clients to them (Reauthenticate) so
// that a rotated password or application credential works without a
// restart, in the CCM and in the approver alike. Credentials Keystone
// refuses are logged once and the old ones stay in use; an unreadable
// config changes nothing.
type CredentialWatch struct {
	path    string
	clients *Clients
	current config.Global
	refused *config.Global // the last new [Global] that failed
}

// NewCredentialWatch watches path for the clients, which were made with
// the [Global] section current.
func NewCredentialWatch(path string, clients *Clients, current config.Global) *CredentialWatch {
	return &CredentialWatch{path: path, clients: clients, current: current}
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
	if reflect.DeepEqual(g, w.current) || (w.refused != nil && reflect.DeepEqual(g, *w.refused)) {
		return false
	}
	if err := w.clients.Reauthenticate(ctx, w.current, g); err != nil {
		logger.Error(err, "New credentials in the cloud config not used")
		w.refused = &g
		return false
	}
	w.current, w.refused = g, nil
	logger.Info("Re-authenticated with the new credentials of the cloud config")
	return true
}

// Run checks every period until ctx ends.
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
