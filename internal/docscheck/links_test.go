package docscheck

import (
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// TestDocumentLinksResolve: every relative link in the README, docs/ and
// the other guides points at a file of the repository, and a link to a
// heading of a Markdown file at a heading it has, so moving or renaming a
// page or a section breaks the build, not a reader's click.
func TestDocumentLinksResolve(t *testing.T) {
	files := append(documentation(t), "charts/stackward/README.md", "bootstrap/README.md", "CHANGELOG.md")
	fsys := os.DirFS(repoRoot(t))
	var links int
	for _, name := range files {
		problems, err := linkProblems(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
		links += len(relativeLinks(readFile(t, name)))
	}
	if links < 50 {
		t.Errorf("found only %d relative links in %v: is the link pattern still right?", links, files)
	}
}

// TestREADMELinksEveryDocument: the README's "Documentation" list reaches
// every page under docs/, so nothing moved out of the README is lost.
func TestREADMELinksEveryDocument(t *testing.T) {
	linked := map[string]bool{}
	for _, l := range relativeLinks(readFile(t, "README.md")) {
		linked[path.Clean(l.path)] = true
	}
	for _, name := range documentation(t) {
		if name != "README.md" && !linked[name] {
			t.Errorf("README.md does not link %s", name)
		}
	}
}

// TestLinkProblemsFindsBrokenLinks: the checker above reports each kind of
// broken link, and only those, so its passing on the real docs means something.
func TestLinkProblemsFindsBrokenLinks(t *testing.T) {
	fsys := fstest.MapFS{
		"README.md": {Data: []byte(strings.Join([]string{
			"# Top",
			"[ok](docs/a.md) [ok dir](docs/) [ok anchor](docs/a.md#upstream-chart-values--stackwards)",
			"[ok self](#top) [web](https://example.com/x.md) `[code](nowhere.md)`",
			"[gone](docs/b.md)",
			"[bad anchor](docs/a.md#no-such-heading)",
			"[out](../x.md)",
			"```",
			"[in a code block](nowhere.md)",
			"```",
		}, "\n"))},
		"docs/a.md": {Data: []byte("# A\n\n## Upstream chart values → Stackward's\n\n[up](../README.md#top) [self](#a)\n")},
	}
	var got []string
	for _, name := range []string{"README.md", "docs/a.md"} {
		p, err := linkProblems(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p...)
	}
	want := []string{
		"README.md:4: link docs/b.md: docs/b.md does not exist",
		"README.md:5: link docs/a.md#no-such-heading: docs/a.md has no heading with the anchor #no-such-heading",
		"README.md:6: link ../x.md leaves the repository",
	}
	if !slices.Equal(got, want) {
		t.Errorf("linkProblems:\n got %q\nwant %q", got, want)
	}
}

// TestHeadingAnchorsAreGitHubs: anchors as GitHub makes them, so a link
// that works on GitHub passes and one that does not fails.
func TestHeadingAnchorsAreGitHubs(t *testing.T) {
	doc := "# Services of type LoadBalancer (Octavia)\n## [LoadBalancer]\n## Load balancer providers (amphora, ovn)\n## `make bench`\n## Steps\n## Steps\n```sh\n# not a heading\n```\n"
	got := headingAnchors(doc)
	for _, a := range []string{"services-of-type-loadbalancer-octavia", "loadbalancer", "load-balancer-providers-amphora-ovn", "make-bench", "steps", "steps-1"} {
		if !got[a] {
			t.Errorf("no anchor %q in %v", a, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a comment in a code block became a heading: %v", got)
	}
}
