//go:build e2e

// Package chart tests the Helm chart in charts/stackward: its `helm
// template` output against golden files for every ci/*-values.yaml, `helm
// lint --strict` with Helm 3 and Helm 4, the values schema, and a real
// install, upgrade and uninstall with the Helm v3 Go SDK into the lab's
// apiserver, checking what the chart's ServiceAccount may and may not do.
package chart

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stackward/stackward/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// chartDir is the chart under test.
func chartDir() string { return filepath.Join(framework.RepoRoot(), "charts", "stackward") }

// ciValuesFiles are the chart's ci/*-values.yaml, by the name before
// "-values.yaml" (e.g. "daemonset").
func ciValuesFiles(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(chartDir(), "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no ci/*-values.yaml in %s", chartDir())
	}
	files := map[string]string{}
	for _, p := range paths {
		files[strings.TrimSuffix(filepath.Base(p), "-values.yaml")] = p
	}
	return files
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// helm runs a pinned helm binary ("helm3" or "helm4") and returns its
// stdout, stderr and error.
func helm(t *testing.T, bin string, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(framework.Tool(t, bin), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Helm keeps its cache and config under HOME; keep them out of the
	// developer's.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// helmTemplate renders the chart as release framework.ChartRelease in
// kube-system with a values file ("" for none) and further arguments.
func helmTemplate(t *testing.T, bin, valuesFile string, extra ...string) string {
	t.Helper()
	args := []string{"template", framework.ChartRelease, chartDir(), "--namespace", framework.ChartNamespace}
	if valuesFile != "" {
		args = append(args, "-f", valuesFile)
	}
	args = append(args, extra...)
	out, stderr, err := helm(t, bin, args...)
	if err != nil {
		t.Fatalf("%s template -f %s: %v\n%s", bin, valuesFile, err, stderr)
	}
	return out
}
