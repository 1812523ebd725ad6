package docscheck

import (
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
)

// documentation are the top-level README and every Markdown file under
// docs/, slash paths from the repository's root.
func documentation(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := fs.WalkDir(os.DirFS(repoRoot(t)), "docs", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found only %v: is docs/ still where the documentation is?", files)
	}
	slices.Sort(files)
	return files
}
