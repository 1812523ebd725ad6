package docscheck

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"unicode"
)

// urlScheme starts a link that leaves the repository (https:, mailto:, oci:).
var urlScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// mdLink is an inline Markdown link or image: [text](target).
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)

// proseLines are a document's lines outside fenced code blocks, with inline
// code spans blanked, so that a link shown as code is not taken for one.
// Line numbers are kept (a code line becomes "").
func proseLines(doc string) []string {
	lines := strings.Split(doc, "\n")
	out := make([]string, len(lines))
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out[i] = codeSpan.ReplaceAllString(l, "``")
		}
	}
	return out
}

// relativeLink is a link written in a document that points into the
// repository: not a URL, not a fragment of the document itself.
type relativeLink struct {
	line     int    // 1-based
	path     string // as written, relative to the document's directory
	fragment string // after '#', or ""
}

// relativeLinks are a document's links into the repository; a link to a
// fragment of the document itself has an empty path.
func relativeLinks(doc string) []relativeLink {
	var out []relativeLink
	for i, l := range proseLines(doc) {
		for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
			target := m[1]
			if urlScheme.MatchString(target) {
				continue // https:, mailto:, oci:
			}
			path, fragment, _ := strings.Cut(target, "#")
			out = append(out, relativeLink{line: i + 1, path: path, fragment: fragment})
		}
	}
	return out
}

// headingAnchors are the anchors GitHub gives a document's headings:
// lower case, punctuation dropped, spaces as hyphens, a repeated anchor
// numbered (-1, -2...).
func headingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLinesKeepingCode(doc) {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimLeft(l, "#")
		if text == "" || text[0] != ' ' {
			continue
		}
		slug := slugify(text)
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// proseLinesKeepingCode are a document's lines outside fenced code blocks
// (a "# comment" in a shell block is no heading), code spans kept.
func proseLinesKeepingCode(doc string) []string {
	var out []string
	fenced := false
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, l)
		}
	}
	return out
}

var linkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// slugify is GitHub's heading anchor for a heading's text.
func slugify(text string) string {
	text = linkText.ReplaceAllString(strings.TrimSpace(text), "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// linkProblems are the relative links of the document name (a slash path
// in fsys, the repository) that point nowhere: at a file or directory that
// does not exist, outside the repository, or at a heading a Markdown file
// does not have.
func linkProblems(fsys fs.FS, name string) ([]string, error) {
	doc, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, l := range relativeLinks(string(doc)) {
		target := name
		if l.path != "" {
			target = path.Join(path.Dir(name), l.path)
		}
		where := fmt.Sprintf("%s:%d: link %s", name, l.line, l.path)
		if l.fragment != "" {
			where += "#" + l.fragment
		}
		if target == ".." || strings.HasPrefix(target, "../") || path.IsAbs(l.path) {
			problems = append(problems, where+" leaves the repository")
			continue
		}
		if _, err := fs.Stat(fsys, target); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %s does not exist", where, target))
			continue
		}
		if l.fragment == "" || !strings.HasSuffix(target, ".md") {
			continue
		}
		body, err := fs.ReadFile(fsys, target)
		if err != nil {
			return nil, err
		}
		if !headingAnchors(string(body))[l.fragment] {
			problems = append(problems, fmt.Sprintf("%s: %s has no heading with the anchor #%s", where, target, l.fragment))
		}
	}
	return problems, nil
}
