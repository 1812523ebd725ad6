package pki

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
)

// ReloadingSigner is a ServingSigner over the CA files in a directory (a
// mounted Secret) that picks up a new CA when the files change, so a CA
// rotation needs no restart of the approver. It reads the two small files
// before every signature (cheap beside the signature itself): a kubelet
// that renews right after the Secret changed must get the new CA, or it
// would keep a certificate of the old one for its whole lifetime. A change
// that is not a usable CA is logged and counted, and signing goes on with
// the CA it had: the old CA stays trusted until the rotation drops it.
type ReloadingSigner struct {
	dir      string
	lifetime time.Duration
	logger   klog.Logger

	expiry  prometheus.Gauge
	reloads *prometheus.CounterVec

	mu              sync.Mutex
	signer          *ServingSigner
	certPEM, keyPEM []byte
}

// NewReloadingSigner loads the CA in dir (failing when it is not usable)
// and registers the CA expiry metric on reg.
func NewReloadingSigner(dir string, lifetime time.Duration, reg prometheus.Registerer, logger klog.Logger) (*ReloadingSigner, error) {
	r := &ReloadingSigner{
		dir: dir, lifetime: lifetime, logger: logger,
		expiry: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "stackward_kubelet_serving_ca_expiry_timestamp_seconds",
			Help: "When the kubelet-serving CA the built-in signer signs with expires (Unix seconds). Rotate it well before: stackward pki rotate.",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stackward_kubelet_serving_ca_reloads_total",
			Help: "Changes of the kubelet-serving CA files the built-in signer saw, by result (loaded, or invalid: kept signing with the previous CA).",
		}, []string{"result"}),
	}
	certPEM, keyPEM, err := r.read()
	if err != nil {
		return nil, err
	}
	if err := r.load(certPEM, keyPEM); err != nil {
		return nil, err
	}
	for _, c := range []prometheus.Collector{r.expiry, r.reloads} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register kubelet-serving CA metrics: %w", err)
		}
	}
	return r, nil
}

// CA is the CA the signer signs with now.
func (r *ReloadingSigner) CA() *CA {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.signer.ca
}

// Sign signs with the CA in the files now, reloading it when they changed.
func (r *ReloadingSigner) Sign(a Approved) ([]byte, error) {
	r.mu.Lock()
	r.reloadLocked()
	s := r.signer
	r.mu.Unlock()
	return s.Sign(a)
}

func (r *ReloadingSigner) reloadLocked() {
	certPEM, keyPEM, err := r.read()
	if err == nil && bytes.Equal(certPEM, r.certPEM) && bytes.Equal(keyPEM, r.keyPEM) {
		return
	}
	if err == nil {
		err = r.load(certPEM, keyPEM)
	}
	if err != nil {
		r.reloads.WithLabelValues("invalid").Inc()
		r.logger.Error(err, "Kubelet-serving CA files changed but are not a usable CA; signing with the previous one", "dir", r.dir, "ca", r.signer.ca.Cert.SerialNumber.String())
		return
	}
	r.reloads.WithLabelValues("loaded").Inc()
	r.logger.Info("Loaded a new kubelet-serving CA", "dir", r.dir, "ca", r.signer.ca.Cert.SerialNumber.String(), "notAfter", r.signer.ca.Cert.NotAfter)
}

func (r *ReloadingSigner) read() (certPEM, keyPEM []byte, err error) {
	if certPEM, err = os.ReadFile(filepath.Join(r.dir, CertFile)); err != nil {
		return nil, nil, fmt.Errorf("read CA certificate: %w", err)
	}
	if keyPEM, err = os.ReadFile(filepath.Join(r.dir, KeyFile)); err != nil {
		return nil, nil, fmt.Errorf("read CA key: %w", err)
	}
	return certPEM, keyPEM, nil
}

func (r *ReloadingSigner) load(certPEM, keyPEM []byte) error {
	ca, err := parseCA(certPEM, keyPEM, filepath.Join(r.dir, CertFile), filepath.Join(r.dir, KeyFile))
	if err != nil {
		return err
	}
	s, err := NewServingSigner(ca, r.lifetime)
	if err != nil {
		return err
	}
	r.signer, r.certPEM, r.keyPEM = s, certPEM, keyPEM
	r.expiry.Set(float64(ca.Cert.NotAfter.Unix()))
	return nil
}
