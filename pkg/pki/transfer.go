package pki

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// SecretName and SecretNamespace name the Secret that carries the
// kubelet-serving CA: the chart's approver.signer.caSecret default, so one
// exported file both seeds further control-plane hosts (Import) and, applied
// with kubectl, gives the approver's built-in signer its CA.
const (
	SecretName      = "stackward-kubelet-serving-ca"
	SecretNamespace = "kube-system"
)

// Export reads the CA in dir and returns it as a Kubernetes Secret manifest
// (keys kubelet-serving-ca.crt and kubelet-serving-ca.key). kubeadm's
// certificate upload carries a fixed list of kubeadm's own files, so the
// kubelet-serving CA needs a way of its own to every control-plane host.
// During a rotation the trust bundle (kubelet-serving-ca-bundle.crt, the
// current and the next CA) is carried too: the approver publishes it to
// the cluster's clients of kubelets. The manifest holds the private key:
// keep it as carefully as the key file.
func Export(dir string) ([]byte, error) {
	return export(dir, CertFile, KeyFile, "")
}

// ExportNext is Export of the next CA of a rotation (stackward pki rotate),
// under the same key names: applied, it makes the approver's built-in
// signer sign with the next CA while the bundle keeps both trusted.
func ExportNext(dir string) ([]byte, error) {
	return export(dir, NextCertFile, NextKeyFile, " (the next CA of a rotation)")
}

func export(dir, certFile, keyFile, what string) ([]byte, error) {
	ca, err := loadPair(filepath.Join(dir, certFile), filepath.Join(dir, keyFile))
	if err != nil {
		return nil, fmt.Errorf("pki export: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, keyFile))
	if err != nil {
		return nil, fmt.Errorf("pki export: %w", err)
	}
	data := map[string][]byte{CertFile: ca.CertPEM, KeyFile: keyPEM}
	bundle, err := os.ReadFile(filepath.Join(dir, BundleFile))
	switch {
	case err == nil:
		if _, err := parseCACerts(bundle); err != nil {
			return nil, fmt.Errorf("pki export: %s: %w", filepath.Join(dir, BundleFile), err)
		}
		data[BundleFile] = bundle
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("pki export: %w", err)
	}
	s := corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: SecretName, Namespace: SecretNamespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
	out, err := yaml.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("pki export: %w", err)
	}
	return append([]byte("# The kubelet-serving CA of "+dir+what+", private key included (stackward pki export).\n"), out...), nil
}

// ImportResult says what Import did.
type ImportResult struct {
	CertPath, KeyPath string
	// Created is false when the same CA was already there.
	Created bool
	CA      *CA
}

// Import writes the CA in an exported Secret manifest (name is its file,
// for errors) into dir. It writes nothing unless the manifest holds a CA
// and its key; it keeps files that hold the same CA and refuses to replace
// a different one, or to complete a half-present pair.
func Import(dir string, manifest []byte, name string) (ImportResult, error) {
	res := ImportResult{CertPath: filepath.Join(dir, CertFile), KeyPath: filepath.Join(dir, KeyFile)}
	var s corev1.Secret
	if err := yaml.UnmarshalStrict(manifest, &s); err != nil {
		return res, fmt.Errorf("pki import: %s: %w", name, err)
	}
	if s.Kind != "Secret" {
		return res, fmt.Errorf("pki import: %s: kind %q, want a Secret from stackward pki export", name, s.Kind)
	}
	certPEM, keyPEM := s.Data[CertFile], s.Data[KeyFile]
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return res, fmt.Errorf("pki import: %s: want data keys %s and %s", name, CertFile, KeyFile)
	}
	ca, err := parseCA(certPEM, keyPEM, name+": "+CertFile, name+": "+KeyFile)
	if err != nil {
		return res, fmt.Errorf("pki import: %w", err)
	}
	res.CA = ca
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
		have, err := Load(dir)
		if err != nil {
			return res, fmt.Errorf("pki import: %s and %s exist but are not a usable CA (left as they are): %w", res.CertPath, res.KeyPath, err)
		}
		if !bytes.Equal(have.Cert.Raw, ca.Cert.Raw) {
			return res, fmt.Errorf("pki import: %s holds another CA (serial %s, %s's is %s); left as it is", res.CertPath, have.Cert.SerialNumber, name, ca.Cert.SerialNumber)
		}
		return res, nil
	case certExists || keyExists:
		return res, errors.New("pki import: only one of " + res.CertPath + " and " + res.KeyPath + " exists; restore or remove it first")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("pki import: %w", err)
	}
	if err := writeExclusive(res.KeyPath, keyPEM, 0o600); err != nil {
		return res, err
	}
	if err := writeExclusive(res.CertPath, certPEM, 0o644); err != nil {
		_ = os.Remove(res.KeyPath)
		return res, err
	}
	res.Created = true
	return res, nil
}
