package main

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Target is the registry a release goes to. Credentials come from the
// docker config (docker login / ~/.docker/config.json), as for other
// registry clients.
type Target struct {
	Registry  string // host[:port][/path]
	PlainHTTP bool
}

func (t Target) repository(image string) (name.Repository, error) {
	var opts []name.Option
	if t.PlainHTTP {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(strings.TrimSuffix(t.Registry, "/")+"/"+image, opts...)
	if err != nil {
		return repo, fmt.Errorf("REGISTRY=%s: %w", t.Registry, err)
	}
	return repo, nil
}

// Check fails unless the registry answers and these credentials may push
// to every image's repository; it writes nothing that stays (an upload
// session that it cancels).
func (t Target) Check(images []string) error {
	for _, image := range images {
		repo, err := t.repository(image)
		if err != nil {
			return err
		}
		if err := remote.CheckPushPermission(repo.Tag("check"), authn.DefaultKeychain, http.DefaultTransport); err != nil {
			return fmt.Errorf("registry %s cannot take a push to %s: %w", t.Registry, repo, err)
		}
	}
	return nil
}

// Push pushes each layout's image index as repo:tag and returns what was
// pushed ("ref@digest"), also when a later push fails, so the caller can say
// exactly what reached the registry.
func (t Target) Push(layoutsDir, tag string, images []string) ([]string, error) {
	// Read every layout before pushing anything.
	indexes := map[string]v1.ImageIndex{}
	for _, image := range images {
		idx, err := readLayout(filepath.Join(layoutsDir, image))
		if err != nil {
			return nil, err
		}
		indexes[image] = idx
	}
	var pushed []string
	for _, image := range images {
		repo, err := t.repository(image)
		if err != nil {
			return pushed, err
		}
		ref := repo.Tag(tag)
		if err := remote.WriteIndex(ref, indexes[image], remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return pushed, fmt.Errorf("push %s: %w", ref, err)
		}
		digest, err := indexes[image].Digest()
		if err != nil {
			return pushed, err
		}
		pushed = append(pushed, ref.String()+"@"+digest.String())
	}
	return pushed, nil
}

// readLayout is the single image index of an OCI layout `build` wrote.
func readLayout(dir string) (v1.ImageIndex, error) {
	lp, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w (run make images)", dir, err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("OCI layout %s: %d entries in index.json, want one image index", dir, len(m.Manifests))
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("OCI layout %s", dir), err)
	}
	return idx, nil
}
