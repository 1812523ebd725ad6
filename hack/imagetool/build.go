package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Platforms every image is built for; the Makefile cross-compiles the
// binaries into linux_<arch>/ directories.
var Platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// BinDir is where an image's binary lives; the entrypoint is BinDir/<name>.
const BinDir = "usr/local/bin"

// BuildOptions are the inputs of Build: with equal options (and equal
// binaries) it writes byte-identical layouts.
type BuildOptions struct {
	BinDir   string // holds linux_<arch>/<image name> per platform
	OutDir   string // bin/images: OutDir/<image name> is an OCI layout
	Images   []string
	Version  string
	Revision string
	Source   string
	Created  time.Time
}

// Built is one image index written to a layout.
type Built struct {
	Name      string
	Layout    string
	Digest    v1.Hash // of the image index
	Platforms []PlatformImage
}

// PlatformImage is one architecture's image within an index.
type PlatformImage struct {
	Platform string
	Digest   v1.Hash
	Size     int64 // manifest, config and compressed layers: what a node pulls
}

// Labels are the image config's labels and the manifests' and index's
// annotations (OCI pre-defined keys).
func (o BuildOptions) Labels(image string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       image,
		"org.opencontainers.image.description": descriptions[image],
		"org.opencontainers.image.source":      o.Source,
		"org.opencontainers.image.url":         o.Source,
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.revision":    o.Revision,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.created":     o.Created.Format(time.RFC3339),
		"org.opencontainers.image.vendor":      "Stackward",
	}
}

var descriptions = map[string]string{
	"stackward-ccm":      "OpenStack cloud-controller-manager for Kubernetes",
	"stackward-approver": "Approves kubelet serving certificates only for the names and IPs the OpenStack cloud reports for the node",
}

// Build writes one OCI layout per image under o.OutDir, replacing what was
// there.
func Build(o BuildOptions) ([]Built, error) {
	base, err := baseEntries()
	if err != nil {
		return nil, err
	}
	baseTar, err := layerTar(base, o.Created)
	if err != nil {
		return nil, err
	}
	baseLayer, err := layerOf(baseTar)
	if err != nil {
		return nil, err
	}
	var out []Built
	for _, name := range o.Images {
		b, err := buildImage(o, name, baseLayer)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", name, err)
		}
		out = append(out, b)
	}
	return out, nil
}

func buildImage(o BuildOptions, name string, base v1.Layer) (Built, error) {
	labels := o.Labels(name)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	b := Built{Name: name, Layout: filepath.Join(o.OutDir, name)}
	for _, p := range Platforms {
		binPath := filepath.Join(o.BinDir, p.OS+"_"+p.Architecture, name)
		bin, err := os.ReadFile(binPath)
		if err != nil {
			return b, fmt.Errorf("binary for %s/%s: %w (the Makefile cross-compiles it: make images)", p.OS, p.Architecture, err)
		}
		img, err := platformImage(o, name, p, base, bin, labels)
		if err != nil {
			return b, fmt.Errorf("%s/%s: %w", p.OS, p.Architecture, err)
		}
		platform := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &platform},
		})
		digest, err := img.Digest()
		if err != nil {
			return b, err
		}
		size, err := pulledSize(img)
		if err != nil {
			return b, err
		}
		b.Platforms = append(b.Platforms, PlatformImage{Platform: p.OS + "/" + p.Architecture, Digest: digest, Size: size})
	}
	idx = mutate.Annotations(idx, labels).(v1.ImageIndex)
	if err := os.RemoveAll(b.Layout); err != nil {
		return b, err
	}
	lp, err := layout.Write(b.Layout, empty.Index)
	if err != nil {
		return b, fmt.Errorf("write layout %s: %w", b.Layout, err)
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": o.Version,
	})); err != nil {
		return b, fmt.Errorf("write layout %s: %w", b.Layout, err)
	}
	if b.Digest, err = idx.Digest(); err != nil {
		return b, err
	}
	return b, nil
}

// platformImage is the base layer plus a layer with the binary, run as
// nonroot with the binary as entrypoint.
func platformImage(o BuildOptions, name string, p v1.Platform, base v1.Layer, bin []byte, labels map[string]string) (v1.Image, error) {
	binTar, err := layerTar([]entry{
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: BinDir + "/", mode: 0o755},
		{name: BinDir + "/" + name, mode: 0o755, data: bin},
	}, o.Created)
	if err != nil {
		return nil, err
	}
	binLayer, err := layerOf(binTar)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: o.Created}, CreatedBy: "imagetool: base (users, CA certificates, /tmp)", Comment: "stackward"}},
		mutate.Addendum{Layer: binLayer, History: v1.History{Created: v1.Time{Time: o.Created}, CreatedBy: "imagetool: /" + BinDir + "/" + name, Comment: "stackward"}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = p.OS, p.Architecture, v1.Time{Time: o.Created}
	cf.Config.User = fmt.Sprintf("%d:%d", nonrootUID, nonrootGID)
	cf.Config.Entrypoint = []string{"/" + BinDir + "/" + name}
	cf.Config.Env = []string{"PATH=/" + BinDir, "SSL_CERT_FILE=/" + CABundlePath}
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = labels
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, labels).(v1.Image), nil
}

// layerOf is a gzip-compressed layer of an uncompressed tar. Go's
// compress/gzip writes no timestamp or name, so equal tars give equal
// digests.
func layerOf(tarBytes []byte) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// pulledSize is what a node downloads for an image: its manifest, config
// and compressed layers.
func pulledSize(img v1.Image) (int64, error) {
	m, err := img.RawManifest()
	if err != nil {
		return 0, err
	}
	c, err := img.RawConfigFile()
	if err != nil {
		return 0, err
	}
	total := int64(len(m) + len(c))
	layers, err := img.Layers()
	if err != nil {
		return 0, err
	}
	for _, l := range layers {
		s, err := l.Size()
		if err != nil {
			return 0, err
		}
		total += s
	}
	return total, nil
}
