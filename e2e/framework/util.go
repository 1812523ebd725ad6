package framework

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var metav1GetOptions = metav1.GetOptions{}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// RepoRoot is the repository's top directory, found from the working
// directory (go test runs in the package's directory).
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && bytes.Contains(data, []byte("module github.com/stackward/stackward\n")) {
			return d
		}
		if filepath.Dir(d) == d {
			panic("repository root (go.mod of github.com/stackward/stackward) not found above " + dir)
		}
	}
}
