package pki

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// TrustBundle is what a client of kubelets must trust: the certificates of
// BundleFile (the current and the next CA while a rotation is under way)
// and of CertFile (the CA signing now), each once, as PEM blocks without
// headers. It reads certificates only, never the key, so a directory that
// holds just the two certificate files (a Secret mounted with those keys)
// is enough. CertFile must exist; BundleFile is optional.
//
// Between `stackward pki rotate` and `--finish` the signing CA may already
// be the next one while kubelets still serve certificates of the current
// one: the union keeps both trusted, whichever of the two files an
// operator updated first.
func TrustBundle(dir string) ([]byte, []*x509.Certificate, error) {
	var certs []*x509.Certificate
	seen := map[string]bool{}
	for _, name := range []string{BundleFile, CertFile} {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) && name == BundleFile {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("kubelet-serving CA bundle: %w", err)
		}
		found, err := parseCACerts(data)
		if err != nil {
			return nil, nil, fmt.Errorf("kubelet-serving CA bundle: %s: %w", path, err)
		}
		for _, c := range found {
			if !seen[string(c.Raw)] {
				seen[string(c.Raw)] = true
				certs = append(certs, c)
			}
		}
	}
	var out bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return out.Bytes(), certs, nil
}

// parseCACerts parses every PEM block of data, each a CA certificate (what
// a ClusterTrustBundle accepts); anything else is an error, as is no
// certificate at all.
func parseCACerts(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %q is not a certificate", block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		if !c.IsCA || !c.BasicConstraintsValid {
			return nil, fmt.Errorf("certificate %q (serial %s) is not a CA", c.Subject.CommonName, c.SerialNumber)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate")
	}
	return certs, nil
}
