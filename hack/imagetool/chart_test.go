package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReleaseChartPointsAtTheRegistry(t *testing.T) {
	out := t.TempDir()
	if err := ReleaseChart("../../charts/stackward", out, "registry.test:5000/team/"); err != nil {
		t.Fatal(err)
	}
	values, err := os.ReadFile(filepath.Join(out, "stackward", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"repository: registry.test:5000/team/stackward-ccm\n",
		"repository: registry.test:5000/team/stackward-approver\n",
	} {
		if !strings.Contains(string(values), want) {
			t.Errorf("values.yaml lacks %q", want)
		}
	}
	if strings.Contains(string(values), "repository: stackward/") {
		t.Error("values.yaml still names a neutral repository")
	}
	// The rest of the chart is copied as is.
	for _, f := range []string{"Chart.yaml", "values.schema.json", "templates/_helpers.tpl"} {
		a, errA := os.ReadFile(filepath.Join("../../charts/stackward", f))
		b, errB := os.ReadFile(filepath.Join(out, "stackward", f))
		if errA != nil || errB != nil || string(a) != string(b) {
			t.Errorf("%s not copied unchanged (%v, %v)", f, errA, errB)
		}
	}
}

func TestReleaseChartRefusesAValuesFileItCannotEdit(t *testing.T) {
	src := filepath.Join(t.TempDir(), "stackward")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "values.yaml"), []byte("ccm:\n  image:\n    repository: somewhere/else\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := ReleaseChart(src, t.TempDir(), "registry.test/x")
	if err == nil || !strings.Contains(err.Error(), "stackward/stackward-ccm") || !strings.Contains(err.Error(), "values.yaml") {
		t.Errorf("error %v, want one naming values.yaml and the line it looked for", err)
	}
}
