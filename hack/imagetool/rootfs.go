package main

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"fmt"
	"sort"
	"time"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The image's only user: distroless's "nonroot", which the chart's
// securityContext names by number.
const (
	nonrootUID = 65532
	nonrootGID = 65532
)

// CABundlePath is where Go's crypto/x509 (and most software) looks for the
// system roots on Linux.
const CABundlePath = "etc/ssl/certs/ca-certificates.crt"

// entry is one file or directory of a layer.
type entry struct {
	name string // relative, no leading slash; directories end in "/"
	mode int64
	uid  int
	data []byte
}

// baseEntries is the distroless-style base every image shares: the users,
// a /tmp, the nonroot home and the Mozilla root certificates (so the CCM can
// verify a Keystone with a public certificate without mounting anything).
func baseEntries() ([]entry, error) {
	certs, err := caBundle()
	if err != nil {
		return nil, err
	}
	return []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\n" +
				fmt.Sprintf("nonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonrootUID, nonrootGID))},
		{name: "etc/group", mode: 0o644, data: []byte(
			"root:x:0:\n" + fmt.Sprintf("nonroot:x:%d:\n", nonrootGID))},
		// Go's resolver honours hosts before DNS only when told so.
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: CABundlePath, mode: 0o644, data: certs},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: nonrootUID},
		{name: "root/", mode: 0o700},
		{name: "tmp/", mode: 0o1777},
	}, nil
}

// caBundle is the NSS (Mozilla) root store pinned by this module's go.sum,
// as PEM. Roots that NSS trusts only with a distrust-after date are left
// out: a PEM file cannot carry that constraint, and trusting them without
// it would be wider than Mozilla's own policy.
func caBundle() ([]byte, error) {
	var buf bytes.Buffer
	n := 0
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("the NSS root bundle (golang.org/x/crypto/x509roots/fallback) is empty")
	}
	return buf.Bytes(), nil
}

// layerTar is a tar stream of the entries, sorted by name, owned by
// root (or uid), all with the same modification time, and nothing else
// from the build machine (no user names, no access times).
func layerTar(entries []entry, mtime time.Time) ([]byte, error) {
	sorted := append([]entry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range sorted {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.uid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if e.name[len(e.name)-1] == '/' {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
