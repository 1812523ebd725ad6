package docscheck

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// valuesRows reads the chart README's values table: one row per key, the
// key and its default each a single code span; the default is YAML.
func valuesRows(t table) (map[string]string, []string) {
	rows := map[string]string{}
	var problems []string
	for _, cells := range t {
		if len(cells) < 2 {
			problems = append(problems, fmt.Sprintf("row %q: want | `key` | `default` | description |", strings.Join(cells, " | ")))
			continue
		}
		keys, defaults := codeSpans(cells[0]), codeSpans(cells[1])
		if len(keys) != 1 || len(defaults) != 1 || strings.Trim(cells[0], "`") != keys[0] || strings.Trim(cells[1], "`") != defaults[0] {
			problems = append(problems, fmt.Sprintf("row %q: the key and the default must each be one code span", strings.Join(cells, " | ")))
			continue
		}
		if _, dup := rows[keys[0]]; dup {
			problems = append(problems, fmt.Sprintf("%s is documented twice", keys[0]))
		}
		rows[keys[0]] = defaults[0]
	}
	return rows, problems
}

// valuesTableProblems compares the README's rows (key → YAML default) with
// values.yaml and values.schema.json. A row documents a key and everything
// under it; a map without a row is documented key by key. Every key of
// values.yaml and of the schema must be documented, every row must name a
// key of both, and its default must be values.yaml's.
func valuesTableProblems(rows map[string]string, values map[string]any, schema map[string]any) []string {
	var problems []string
	documented := map[string]bool{}
	var walkValues func(prefix string, m map[string]any)
	walkValues = func(prefix string, m map[string]any) {
		for k, v := range m {
			key := prefix + k
			if def, ok := rows[key]; ok {
				documented[key] = true
				var want any
				if err := yaml.Unmarshal([]byte(def), &want); err != nil {
					problems = append(problems, fmt.Sprintf("%s: the README's default %q is no YAML: %v", key, def, err))
				} else if !reflect.DeepEqual(normalize(want), normalize(v)) {
					got, _ := yaml.Marshal(v)
					problems = append(problems, fmt.Sprintf("%s: the README says the default is %s, values.yaml has %s", key, def, strings.TrimSpace(string(got))))
				}
				continue
			}
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
				walkValues(key+".", sub)
				continue
			}
			problems = append(problems, fmt.Sprintf("%s (values.yaml) is not in the README's values table", key))
		}
	}
	walkValues("", values)

	var walkSchema func(prefix string, node map[string]any)
	walkSchema = func(prefix string, node map[string]any) {
		props, _ := node["properties"].(map[string]any)
		for k, v := range props {
			key := prefix + k
			if _, ok := rows[key]; ok {
				documented[key] = true
				continue
			}
			sub, _ := v.(map[string]any)
			if _, nested := sub["properties"]; nested {
				walkSchema(key+".", sub)
				continue
			}
			problems = append(problems, fmt.Sprintf("%s (values.schema.json) is not in the README's values table", key))
		}
	}
	walkSchema("", schema)

	for key := range rows {
		if !hasPath(values, key) {
			problems = append(problems, fmt.Sprintf("the README documents %s, which values.yaml does not have", key))
		}
		if !schemaHasPath(schema, key) {
			problems = append(problems, fmt.Sprintf("the README documents %s, which values.schema.json does not have", key))
		}
	}
	sort.Strings(problems)
	return problems
}

// normalize makes YAML from the README and from values.yaml comparable:
// both went through JSON, but nil and empty collections differ in Go.
func normalize(v any) any {
	b, err := yaml.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := yaml.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

func hasPath(m map[string]any, key string) bool {
	var cur any = m
	for _, part := range strings.Split(key, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = mm[part]; !ok {
			return false
		}
	}
	return true
}

func schemaHasPath(schema map[string]any, key string) bool {
	cur := schema
	for _, part := range strings.Split(key, ".") {
		props, _ := cur["properties"].(map[string]any)
		next, ok := props[part].(map[string]any)
		if !ok {
			return false
		}
		cur = next
	}
	return true
}
