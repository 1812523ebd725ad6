package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cloudflare/cfssl/helpers"
)

// Files of a rotation, beside the current CA in the PKI directory.
const (
	NextCertFile = "kubelet-serving-ca-next.crt"
	NextKeyFile  = "kubelet-serving-ca-next.key"
	// BundleFile holds the current and the next CA certificate: the
	// apiserver's --kubelet-certificate-authority while kubelets move from
	// one to the other, so every kubelet stays reachable.
	BundleFile = "kubelet-serving-ca-bundle.crt"
)

// RotateOptions say where the current CA is and how to make the next one.
type RotateOptions struct {
	Dir          string
	KeyAlgorithm string
	Lifetime     time.Duration
}

// RotateResult says what Rotate did.
type RotateResult struct {
	Current, Next *CA
	// NextCertPath, NextKeyPath and BundlePath are the files written.
	NextCertPath, NextKeyPath, BundlePath string
	// Created is false when a next CA from an earlier run was kept.
	Created bool
}

// Rotate creates the next kubelet-serving CA beside the current one
// (kubelet-serving-ca-next.{crt,key}) and the trust bundle of both. It
// reads the current CA first and changes nothing when that fails, so a
// missing or unreadable CA is named and no half rotation is left behind. A
// next CA from an earlier run is kept (running it again only rewrites the
// bundle), and the current CA files are never touched: Finish promotes.
func Rotate(opts RotateOptions) (RotateResult, error) {
	if opts.Dir == "" {
		return RotateResult{}, errors.New("pki rotate: no directory")
	}
	res := RotateResult{
		NextCertPath: filepath.Join(opts.Dir, NextCertFile),
		NextKeyPath:  filepath.Join(opts.Dir, NextKeyFile),
		BundlePath:   filepath.Join(opts.Dir, BundleFile),
	}
	cur, err := Load(opts.Dir)
	if err != nil {
		return res, fmt.Errorf("pki rotate: the current CA: %w", err)
	}
	res.Current = cur
	next, err := loadPair(res.NextCertPath, res.NextKeyPath)
	switch {
	case err == nil:
		res.Next = next
	case errors.Is(err, os.ErrNotExist):
		scratch, err := os.MkdirTemp(opts.Dir, ".rotate-")
		if err != nil {
			return res, fmt.Errorf("pki rotate: %w", err)
		}
		defer os.RemoveAll(scratch)
		made, err := Init(InitOptions{Dir: scratch, KeyAlgorithm: opts.KeyAlgorithm, Lifetime: opts.Lifetime, CommonName: cur.Cert.Subject.CommonName})
		if err != nil {
			return res, fmt.Errorf("pki rotate: %w", err)
		}
		// The key first and exclusively, as Init does.
		if err := os.Link(made.KeyPath, res.NextKeyPath); err != nil {
			return res, fmt.Errorf("pki rotate: %w", err)
		}
		if err := os.Link(made.CertPath, res.NextCertPath); err != nil {
			_ = os.Remove(res.NextKeyPath)
			return res, fmt.Errorf("pki rotate: %w", err)
		}
		if res.Next, err = loadPair(res.NextCertPath, res.NextKeyPath); err != nil {
			return res, fmt.Errorf("pki rotate: %w", err)
		}
		res.Created = true
	default:
		return res, fmt.Errorf("pki rotate: %s and %s from an earlier rotation are not a usable CA (left as they are; remove both to start over): %w",
			res.NextCertPath, res.NextKeyPath, err)
	}
	bundle := append(append([]byte{}, cur.CertPEM...), res.Next.CertPEM...)
	if err := writeReplace(res.BundlePath, bundle, 0o644); err != nil {
		return res, err
	}
	return res, nil
}

// FinishResult says what Finish did.
type FinishResult struct {
	CertPath, KeyPath, OldCertPath, OldKeyPath string
	CA                                         *CA
}

// Finish promotes the next CA: the current pair becomes
// kubelet-serving-ca-old.{crt,key}, the next pair kubelet-serving-ca.{crt,key}
// and the bundle holds the new CA alone. Run it when every kubelet serves a
// certificate of the next CA.
func Finish(dir string) (FinishResult, error) {
	res := FinishResult{
		CertPath: filepath.Join(dir, CertFile), KeyPath: filepath.Join(dir, KeyFile),
		OldCertPath: filepath.Join(dir, "kubelet-serving-ca-old.crt"), OldKeyPath: filepath.Join(dir, "kubelet-serving-ca-old.key"),
	}
	if _, err := Load(dir); err != nil {
		return res, fmt.Errorf("pki rotate --finish: the current CA: %w", err)
	}
	next, err := loadPair(filepath.Join(dir, NextCertFile), filepath.Join(dir, NextKeyFile))
	if err != nil {
		return res, fmt.Errorf("pki rotate --finish: the next CA (run stackward pki rotate first): %w", err)
	}
	moves := [][2]string{
		{res.CertPath, res.OldCertPath}, {res.KeyPath, res.OldKeyPath},
		{filepath.Join(dir, NextKeyFile), res.KeyPath}, {filepath.Join(dir, NextCertFile), res.CertPath},
	}
	for _, m := range moves {
		if err := os.Rename(m[0], m[1]); err != nil {
			return res, fmt.Errorf("pki rotate --finish: %w", err)
		}
	}
	if err := writeReplace(filepath.Join(dir, BundleFile), next.CertPEM, 0o644); err != nil {
		return res, err
	}
	res.CA = next
	return res, nil
}

func loadPair(certPath, keyPath string) (*CA, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	return parseCA(certPEM, keyPEM, certPath, keyPath)
}

// writeReplace replaces path atomically (temp file and rename).
func writeReplace(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ExpiresWithin reports whether the CA certificate in certPEM expires
// before now+threshold, and when it expires.
func ExpiresWithin(certPEM []byte, now time.Time, threshold time.Duration) (bool, time.Time, error) {
	cert, err := helpers.ParseCertificatePEM(certPEM)
	if err != nil {
		return false, time.Time{}, err
	}
	return cert.NotAfter.Before(now.Add(threshold)), cert.NotAfter, nil
}

// ParseCertificate parses one PEM certificate.
func ParseCertificate(certPEM []byte) (*x509.Certificate, error) {
	return helpers.ParseCertificatePEM(certPEM)
}
