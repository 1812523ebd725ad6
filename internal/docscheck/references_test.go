package docscheck

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// valuePath is a code span that reads like a chart value: dotted names.
var valuePath = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9]*(\.[a-zA-Z0-9][-a-zA-Z0-9]*)+$`)

// schemaResolves reports whether a dotted path names a value the schema
// accepts: through properties, and anything under a free-form map.
func schemaResolves(schema map[string]any, path string) bool {
	cur := schema
	for _, part := range strings.Split(path, ".") {
		props, _ := cur["properties"].(map[string]any)
		if next, ok := props[part].(map[string]any); ok {
			cur = next
			continue
		}
		if _, ok := cur["additionalProperties"].(map[string]any); ok {
			return true // a map of free keys (extraArgs, config sections, ...)
		}
		return false
	}
	return true
}

// TestDocumentsNameOnlyValuesTheChartHas: every `a.b.c` code span in the
// chart README, the top-level README and docs/ whose first name is a
// top-level chart value names a value the schema accepts, so prose does not
// keep pointing at a renamed or removed value.
func TestDocumentsNameOnlyValuesTheChartHas(t *testing.T) {
	_, schema := chartValuesAndSchema(t)
	top := schema["properties"].(map[string]any)
	// Each of these must name chart values; the rest of docs/ is checked too.
	mustName := []string{"charts/stackward/README.md", "docs/explanation/approver.md", "docs/install/upstream-ccm.md", "docs/install/images-and-releases.md"}
	files := slices.Clone(mustName)
	for _, f := range documentation(t) {
		if !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	for _, file := range files {
		var checked int
		for _, span := range ourSpans(t, readFile(t, file)) {
			if !valuePath.MatchString(span) {
				continue
			}
			if _, ok := top[strings.Split(span, ".")[0]]; !ok {
				continue // a file name, a label, a Go package
			}
			checked++
			if !schemaResolves(schema, span) {
				t.Errorf("%s names the chart value %s, which values.schema.json does not have", file, span)
			}
		}
		if checked == 0 && slices.Contains(mustName, file) {
			t.Errorf("%s: no chart value found to check", file)
		}
	}
}

// upstreamHeading starts the chart README's table of the upstream chart's
// values, whose first column names values of that chart, not ours.
const upstreamHeading = "## Coming from the upstream openstack-cloud-controller-manager chart"

// ourSpans are a README's code spans, without the upstream chart's names.
func ourSpans(t *testing.T, doc string) []string {
	t.Helper()
	before, after, found := strings.Cut(doc, upstreamHeading)
	if !found {
		return codeSpans(doc)
	}
	spans := codeSpans(before)
	section, rest, _ := strings.Cut(after, "\n## ")
	spans = append(spans, codeSpans(rest)...)
	tbl, err := tableAfter(upstreamHeading+section, upstreamHeading)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range tbl {
		for _, cell := range row[1:] {
			spans = append(spans, codeSpans(cell)...)
		}
	}
	return spans
}

// TestSchemaResolvesOnlyRealPaths: the resolver used above refuses a
// misspelt value and accepts keys of free-form maps.
func TestSchemaResolvesOnlyRealPaths(t *testing.T) {
	_, schema := chartValuesAndSchema(t)
	tests := []struct {
		name string
		path string
		want bool
	}{
		{"a nested value resolves", "ccm.image.digest", true},
		{"a misspelt value does not resolve", "ccm.image.digests", false},
		{"a flag under extraArgs resolves", "ccm.extraArgs.v", true},
		{"a removed value does not resolve", "serviceMonitor.ccm.bearerToken", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := schemaResolves(schema, tt.path); got != tt.want {
				t.Errorf("schemaResolves(%s) = %v, want %v", tt.path, got, tt.want)
			}
		})
	}
}
