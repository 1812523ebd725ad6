package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// chartImages are the chart's image values: the line in values.yaml that
// names each default repository, and the image it becomes in a release.
var chartImages = []struct{ line, image string }{
	{"    repository: stackward/stackward-ccm\n", "stackward-ccm"},
	{"    repository: stackward/stackward-approver\n", "stackward-approver"},
}

// ReleaseChart copies the chart at src to out/<chart directory name> with
// its default image repositories set to registry/<image>. Tags stay empty:
// the chart then uses its appVersion, which `helm package --app-version`
// sets to the release's version. Every edit must match exactly once, so a
// reworded values.yaml fails the release instead of shipping the neutral
// names.
func ReleaseChart(src, out, registry string) error {
	dst := filepath.Join(out, filepath.Base(filepath.Clean(src)))
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if rel == "values.yaml" {
			if data, err = setRepositories(data, registry); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		return fmt.Errorf("release chart: %w", err)
	}
	return nil
}

func setRepositories(values []byte, registry string) ([]byte, error) {
	registry = strings.TrimSuffix(registry, "/")
	for _, ci := range chartImages {
		if n := bytes.Count(values, []byte(ci.line)); n != 1 {
			return nil, fmt.Errorf("found %q %d times, want once", strings.TrimSpace(ci.line), n)
		}
		repl := strings.Replace(ci.line, "stackward/"+ci.image, registry+"/"+ci.image, 1)
		values = bytes.Replace(values, []byte(ci.line), []byte(repl), 1)
	}
	return values, nil
}
