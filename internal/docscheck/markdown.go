package docscheck

import (
	"fmt"
	"regexp"
	"strings"
)

// table is a Markdown table: its rows' cells, the header and the separator
// line left out.
type table [][]string

// tableAfter returns the first table after the line that is exactly
// heading (e.g. "## Values") in a Markdown document; heading may also be
// the table's own header row.
func tableAfter(doc, heading string) (table, error) {
	lines := strings.Split(doc, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == heading {
			start = i + 1
			if strings.HasPrefix(heading, "|") {
				start = i // the header row starts the table
			}
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("no line %q", heading)
	}
	var t table
	inTable := false
	for _, l := range lines[start:] {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") {
			if inTable {
				break
			}
			if strings.HasPrefix(l, "#") {
				return nil, fmt.Errorf("no table between %q and %q", heading, l)
			}
			continue
		}
		if !inTable {
			inTable = true // the header row
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) > 0 && strings.Trim(cells[0], "-: ") == "" {
			continue // the separator row
		}
		t = append(t, cells)
	}
	if len(t) == 0 {
		return nil, fmt.Errorf("no table after %q", heading)
	}
	return t, nil
}

var codeSpan = regexp.MustCompile("`([^`]*)`")

// codeSpans are the `...` parts of a cell, in order.
func codeSpans(cell string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}
