package docscheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// repoRoot is two directories up from this file.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func readFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func chartValuesAndSchema(t *testing.T) (map[string]any, map[string]any) {
	t.Helper()
	var values, schema map[string]any
	if err := yaml.Unmarshal([]byte(readFile(t, "charts/stackward/values.yaml")), &values); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	if err := json.Unmarshal([]byte(readFile(t, "charts/stackward/values.schema.json")), &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	return values, schema
}

// TestChartREADMEValuesTableMatchesTheChart: every key of values.yaml and
// of the schema is in the chart README's values table with values.yaml's
// default, and the table names no key the chart does not have.
func TestChartREADMEValuesTableMatchesTheChart(t *testing.T) {
	tbl, err := tableAfter(readFile(t, "charts/stackward/README.md"), "## Values")
	if err != nil {
		t.Fatalf("charts/stackward/README.md: %v", err)
	}
	rows, problems := valuesRows(tbl)
	values, schema := chartValuesAndSchema(t)
	problems = append(problems, valuesTableProblems(rows, values, schema)...)
	for _, p := range problems {
		t.Errorf("charts/stackward/README.md: %s", p)
	}
}

// TestValuesTableCheckFindsDrift: the comparison above reports each kind
// of drift, so its passing on the real README means something.
func TestValuesTableCheckFindsDrift(t *testing.T) {
	values := map[string]any{
		"replicas": 2,
		"image":    map[string]any{"repository": "stackward/stackward-ccm", "tag": ""},
		"extraArgs": map[string]any{
			"kube-api-qps": 100,
		},
	}
	schema := map[string]any{"properties": map[string]any{
		"replicas":  map[string]any{"type": "integer"},
		"image":     map[string]any{"properties": map[string]any{"repository": map[string]any{}, "tag": map[string]any{}}},
		"extraArgs": map[string]any{"type": "object"},
		"global":    map[string]any{"type": "object"},
	}}
	complete := map[string]string{
		"replicas": "2", "image.repository": "stackward/stackward-ccm", "image.tag": `""`,
		"extraArgs": "{kube-api-qps: 100}", "global": "{}",
	}
	tests := []struct {
		name   string
		change func(rows map[string]string, values map[string]any)
		want   string // "" means no problem at all
	}{
		{"a complete table has no problem", func(map[string]string, map[string]any) {}, ""},
		{"a key missing from the table is reported", func(rows map[string]string, _ map[string]any) { delete(rows, "image.tag") }, "image.tag (values.yaml) is not in the README's values table"},
		{"a different scalar default is reported", func(rows map[string]string, _ map[string]any) { rows["replicas"] = "3" }, "replicas: the README says the default is 3"},
		{"a map default documented as empty is reported", func(rows map[string]string, _ map[string]any) { rows["extraArgs"] = "{}" }, "extraArgs: the README says the default is {}"},
		{"a row for a key the chart lacks is reported", func(rows map[string]string, _ map[string]any) { rows["replica"] = "2" }, "the README documents replica, which values.yaml does not have"},
		{"a schema key without a row is reported", func(rows map[string]string, values map[string]any) { delete(rows, "global") }, "global (values.schema.json) is not in the README's values table"},
		{"a new values.yaml key is reported", func(_ map[string]string, values map[string]any) {
			values["image"].(map[string]any)["digest"] = ""
		}, "image.digest (values.yaml) is not in the README's values table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := map[string]string{}
			for k, v := range complete {
				rows[k] = v
			}
			vals := map[string]any{}
			b, _ := json.Marshal(values)
			_ = json.Unmarshal(b, &vals)
			vals["global"] = map[string]any{}
			tt.change(rows, vals)
			got := valuesTableProblems(rows, vals, schema)
			if tt.want == "" {
				if len(got) > 0 {
					t.Errorf("problems %q, want none", got)
				}
				return
			}
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tt.want) }) {
				t.Errorf("problems %q, want one saying %q", got, tt.want)
			}
		})
	}
}

// TestValuesRowsRejectsRowsItCannotCompare: a row whose key or default is
// not a single code span would silently escape the comparison.
func TestValuesRowsRejectsRowsItCannotCompare(t *testing.T) {
	tests := []struct {
		name string
		row  []string
	}{
		{"two keys in one row are refused", []string{"`a`, `b`", "`1`", ""}},
		{"a default in prose is refused", []string{"`a`", "the release's name", ""}},
		{"a key written with braces and prose is refused", []string{"`a.{b,c}` etc.", "`1`", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, problems := valuesRows(table{tt.row}); len(problems) == 0 {
				t.Errorf("row %q accepted", tt.row)
			}
		})
	}
}
