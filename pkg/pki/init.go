package pki

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cloudflare/cfssl/csr"
	"github.com/cloudflare/cfssl/helpers"
	"github.com/cloudflare/cfssl/initca"
)

// File names of the kubelet-serving CA inside the PKI directory, next to
// kubeadm's ca.crt.
const (
	CertFile = "kubelet-serving-ca.crt"
	KeyFile  = "kubelet-serving-ca.key"
)

// Key algorithms Init offers.
const (
	KeyECDSA = "ecdsa" // P-256
	KeyRSA   = "rsa"   // 3072 bits
)

// DefaultCALifetime is ten years, kubeadm's CA lifetime.
const DefaultCALifetime = 10 * 365 * 24 * time.Hour

// InitOptions say where and how to create the CA.
type InitOptions struct {
	// Dir is the PKI directory, e.g. /etc/kubernetes/pki.
	Dir string
	// KeyAlgorithm is KeyECDSA (default) or KeyRSA.
	KeyAlgorithm string
	// Lifetime of the CA certificate (default DefaultCALifetime).
	Lifetime time.Duration
	// CommonName of the CA (default "kubelet-serving-ca").
	CommonName string
}

// InitResult says what Init did.
type InitResult struct {
	CertPath, KeyPath string
	// Created is false when a valid CA was already there (nothing written).
	Created bool
	Cert    *x509.Certificate
}

// Init creates Dir/kubelet-serving-ca.{crt,key} unless they exist. It never
// overwrites a key: when both files exist and belong together it leaves them
// as they are; when only one exists, or they do not match, it fails.
func Init(opts InitOptions) (InitResult, error) {
	quietCFSSL()
	if opts.Dir == "" {
		return InitResult{}, errors.New("pki init: no directory")
	}
	if opts.KeyAlgorithm == "" {
		opts.KeyAlgorithm = KeyECDSA
	}
	if opts.Lifetime == 0 {
		opts.Lifetime = DefaultCALifetime
	}
	if opts.CommonName == "" {
		opts.CommonName = "kubelet-serving-ca"
	}
	var kr *csr.KeyRequest
	switch opts.KeyAlgorithm {
	case KeyECDSA:
		kr = &csr.KeyRequest{A: "ecdsa", S: 256}
	case KeyRSA:
		kr = &csr.KeyRequest{A: "rsa", S: 3072}
	default:
		return InitResult{}, fmt.Errorf("pki init: key algorithm %q: want %s or %s", opts.KeyAlgorithm, KeyECDSA, KeyRSA)
	}
	if opts.Lifetime < 24*time.Hour {
		return InitResult{}, fmt.Errorf("pki init: CA lifetime %s is shorter than a day", opts.Lifetime)
	}
	res := InitResult{CertPath: filepath.Join(opts.Dir, CertFile), KeyPath: filepath.Join(opts.Dir, KeyFile)}
	certExists, err := exists(res.CertPath)
	if err != nil {
		return res, err
	}
	keyExists, err := exists(res.KeyPath)
	if err != nil {
		return res, err
	}
	switch {
	case certExists && keyExists:
		ca, err := Load(opts.Dir)
		if err != nil {
			return res, fmt.Errorf("pki init: %s and %s exist but are not a usable CA (left as they are): %w", res.CertPath, res.KeyPath, err)
		}
		res.Cert = ca.Cert
		return res, nil
	case keyExists:
		return res, fmt.Errorf("pki init: %s exists without %s; refusing to overwrite the key (restore the certificate or remove the key)", res.KeyPath, res.CertPath)
	case certExists:
		return res, fmt.Errorf("pki init: %s exists without its key %s; restore the key, or remove the certificate to create a new CA", res.CertPath, res.KeyPath)
	}

	certPEM, _, keyPEM, err := initca.New(&csr.CertificateRequest{
		CN:         opts.CommonName,
		Names:      []csr.Name{{O: "stackward"}},
		KeyRequest: kr,
		CA:         &csr.CAConfig{PathLength: 0, PathLenZero: true, Expiry: opts.Lifetime.String()},
	})
	if err != nil {
		return res, fmt.Errorf("pki init: create CA with cfssl: %w", err)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return res, fmt.Errorf("pki init: %w", err)
	}
	// The key first, exclusively: a concurrent init cannot clobber it.
	if err := writeExclusive(res.KeyPath, keyPEM, 0o600); err != nil {
		return res, err
	}
	if err := writeExclusive(res.CertPath, certPEM, 0o644); err != nil {
		_ = os.Remove(res.KeyPath)
		return res, err
	}
	res.Created = true
	res.Cert, err = helpers.ParseCertificatePEM(certPEM)
	return res, err
}

// CA is a loaded kubelet-serving CA.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	Key     crypto.Signer
}

// Load reads Dir/kubelet-serving-ca.{crt,key} and checks that they are a
// CA certificate and its key.
func Load(dir string) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("read CA certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("read CA key: %w", err)
	}
	return parseCA(certPEM, keyPEM, certPath, keyPath)
}

// parseCA checks that certPEM is a CA certificate and keyPEM its key;
// errors name certName or keyName.
func parseCA(certPEM, keyPEM []byte, certName, keyName string) (*CA, error) {
	cert, err := helpers.ParseCertificatePEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certName, err)
	}
	if !cert.IsCA || !cert.BasicConstraintsValid {
		return nil, fmt.Errorf("%s: not a CA certificate", certName)
	}
	key, err := helpers.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyName, err)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyName, err)
	}
	if !bytes.Equal(pub, cert.RawSubjectPublicKeyInfo) {
		return nil, fmt.Errorf("%s is not the key of %s", keyName, certName)
	}
	return &CA{Cert: cert, CertPEM: certPEM, Key: key}, nil
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("pki init: %w", err)
}

func writeExclusive(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("pki init: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("pki init: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("pki init: write %s: %w", path, err)
	}
	return nil
}
