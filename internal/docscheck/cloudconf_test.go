package docscheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stackward/stackward/pkg/config"
)

// schemaSections are the sections of the chart's structured cloud.conf
// (cloudConfig.config), section → key → the key's schema.
func schemaSections(t *testing.T) map[string]map[string]map[string]any {
	t.Helper()
	_, schema := chartValuesAndSchema(t)
	node := schema
	for _, p := range []string{"cloudConfig", "config"} {
		node = node["properties"].(map[string]any)[p].(map[string]any)
	}
	out := map[string]map[string]map[string]any{}
	for section, s := range node["properties"].(map[string]any) {
		sec := s.(map[string]any)
		if section == "LoadBalancerClass" {
			sec = sec["additionalProperties"].(map[string]any) // class name → keys
		}
		keys := map[string]map[string]any{}
		for k, v := range sec["properties"].(map[string]any) {
			keys[k] = v.(map[string]any)
		}
		out[section] = keys
	}
	return out
}

// sampleValue is a value of the type a key's schema asks for: its first
// example or enum value, else one of its type.
func sampleValue(key string, s map[string]any) string {
	if ex, ok := s["examples"].([]any); ok && len(ex) > 0 {
		return strconv.Quote(fmt.Sprint(ex[0]))
	}
	if enum, ok := s["enum"].([]any); ok {
		return fmt.Sprint(enum[0])
	}
	if strings.Contains(fmt.Sprint(s["description"]), "Go duration") {
		return "5s"
	}
	switch s["type"] {
	case "boolean":
		return "true"
	case "integer":
		return "1"
	}
	return strconv.Quote("sample-" + key)
}

// parseOne parses a cloud.conf with one key in one section (a
// LoadBalancerClass gets the class "sample").
func parseOne(section, key, value string) ([]config.Warning, error) {
	header := "[" + section + "]"
	if section == "LoadBalancerClass" {
		header = `[LoadBalancerClass "sample"]`
	}
	conf := header + "\n" + key + " = " + value + "\n"
	_, warnings, err := config.Parse("cloud.conf", strings.NewReader(conf))
	return warnings, err
}

// TestStructuredCloudConfigSchemaMatchesTheParser: every section and key
// the chart's schema accepts in cloudConfig.config is one stackward's
// parser reads (no "unknown" warning, no error for a value of the schema's
// type), so what the chart renders is what the CCM uses.
func TestStructuredCloudConfigSchemaMatchesTheParser(t *testing.T) {
	sections := schemaSections(t)
	for _, section := range sortedMapKeys(sections) {
		for _, key := range sortedMapKeys(sections[section]) {
			t.Run(section+"/"+key+" is read by the parser", func(t *testing.T) {
				value := sampleValue(key, sections[section][key])
				warnings, err := parseOne(section, key, value)
				if err != nil {
					t.Errorf("[%s] %s = %s: %v", section, key, value, err)
				}
				if len(warnings) > 0 {
					t.Errorf("[%s] %s = %s: %v", section, key, value, warnings)
				}
			})
		}
	}
}

// cloudConfReference documents every cloud.conf key; its table of upstream
// [LoadBalancer] keys is checked below.
const cloudConfReference = "docs/reference/cloud-conf.md"

// loadBalancerReference documents Services of type LoadBalancer; its
// annotation table is checked below.
const loadBalancerReference = "docs/reference/load-balancers.md"

// TestDocumentedLoadBalancerKeysMatchTheParserAndTheChart: the cloud.conf
// reference's table of upstream [LoadBalancer] keys says for each whether
// Stackward reads it; the parser agrees, and the chart's structured
// schema accepts exactly the keys read (and the [LoadBalancerClass] keys
// the table lists).
func TestDocumentedLoadBalancerKeysMatchTheParserAndTheChart(t *testing.T) {
	tbl, err := tableAfter(readFile(t, cloudConfReference), "| key | Stackward |")
	if err != nil {
		t.Fatalf("%s: %v", cloudConfReference, err)
	}
	sections := schemaSections(t)
	documented := map[string]map[string]bool{"LoadBalancer": {}, "LoadBalancerClass": {}}
	for _, row := range tbl {
		section, keys := "LoadBalancer", codeSpans(row[0])
		if strings.HasPrefix(row[0], "`[LoadBalancerClass") {
			section, keys = "LoadBalancerClass", keys[1:]
		}
		supported := !strings.HasPrefix(row[1], "not supported")
		for _, key := range keys {
			documented[section][key] = true
			t.Run(fmt.Sprintf("[%s] %s as the reference says", section, key), func(t *testing.T) {
				warnings, _ := parseOne(section, key, "1")
				unknown := slices.ContainsFunc(warnings, func(w config.Warning) bool { return strings.Contains(w.Msg, "unknown") })
				if supported == unknown {
					t.Errorf("%s says %q for [%s] %s, the parser warns %v", cloudConfReference, row[1], section, key, warnings)
				}
				if _, inSchema := sections[section][key]; inSchema != supported {
					t.Errorf("%s says %q for [%s] %s; in the chart's cloudConfig.config schema: %v", cloudConfReference, row[1], section, key, inSchema)
				}
			})
		}
	}
	for _, section := range []string{"LoadBalancer", "LoadBalancerClass"} {
		for key := range sections[section] {
			if !documented[section][key] {
				t.Errorf("the chart's schema accepts [%s] %s, which %s's key table does not list", section, key, cloudConfReference)
			}
		}
	}
}

// TestDocumentedAnnotationTableMatchesTheCode: every Service annotation
// that pkg/loadbalancer defines (its Annotation* constants) is in the load
// balancer reference's annotation table, and the table lists no other.
func TestDocumentedAnnotationTableMatchesTheCode(t *testing.T) {
	tbl, err := tableAfter(readFile(t, loadBalancerReference), "| annotation | value | default (`[LoadBalancer]` key) |")
	if err != nil {
		t.Fatalf("%s: %v", loadBalancerReference, err)
	}
	inDocs := map[string]bool{}
	for _, row := range tbl {
		for _, a := range codeSpans(row[0]) {
			inDocs[a] = true
		}
	}
	inCode := annotationConstants(t, filepath.Join(repoRoot(t), "pkg", "loadbalancer"))
	if len(inCode) < 10 {
		t.Fatalf("found only %d Annotation* constants in pkg/loadbalancer: %v", len(inCode), inCode)
	}
	for _, a := range sortedMapKeys(inCode) {
		if !inDocs[a] {
			t.Errorf("%s (pkg/loadbalancer %s) is not in %s's annotation table", a, inCode[a], loadBalancerReference)
		}
	}
	for _, a := range sortedMapKeys(inDocs) {
		if _, ok := inCode[a]; !ok {
			t.Errorf("%s's annotation table lists %s, which pkg/loadbalancer does not define", loadBalancerReference, a)
		}
	}
}

// annotationConstants are the string constants named Annotation* in a
// package's non-test files: value → name.
func annotationConstants(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Annotation") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[v] = name.Name
				}
			}
		}
	}
	return out
}

func sortedMapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
