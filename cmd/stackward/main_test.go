package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommandLine(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-kubeconfig")
	pkiDir := filepath.Join(t.TempDir(), "pki")
	emptyDir := t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		stderr string
		stdout string
	}{
		{name: "no command prints the usage and fails", status: 2, stderr: "Commands:"},
		{name: "an unknown command is named", args: []string{"fix"}, status: 2, stderr: `unknown command "fix"`},
		{name: "help lists doctor", args: []string{"help"}, status: 0, stdout: "doctor"},
		{name: "doctor reports every bad flag value at once", args: []string{"doctor", "-o", "yaml", "--timeout", "0s"}, status: 2, stderr: "--timeout"},
		{name: "doctor refuses arguments", args: []string{"doctor", "node-1"}, status: 2, stderr: "unexpected arguments"},
		{name: "doctor without a reachable cluster cannot diagnose", args: []string{"doctor", "--kubeconfig", missing}, status: 2, stderr: "kubeconfig"},
		{name: "pki init creates the kubelet-serving CA", args: []string{"pki", "init", "--dir", pkiDir}, status: 0, stdout: "created kubelet-serving CA"},
		{name: "pki init again keeps it", args: []string{"pki", "init", "--dir", pkiDir}, status: 0, stdout: "kept the existing"},
		{name: "pki without a subcommand prints its usage", args: []string{"pki"}, status: 2, stderr: "stackward pki <init|export|import|rotate>"},
		{name: "pki export prints the CA as the chart's Secret", args: []string{"pki", "export", "--dir", pkiDir}, status: 0, stdout: "name: stackward-kubelet-serving-ca"},
		{name: "pki import without a file is refused", args: []string{"pki", "import", "--dir", pkiDir}, status: 2, stderr: "want 1 arguments"},
		{name: "pki import of a missing file names it", args: []string{"pki", "import", "--dir", t.TempDir(), missing}, status: 1, stderr: missing},
		{name: "pki rotate without a CA names the file and changes nothing", args: []string{"pki", "rotate", "--dir", emptyDir}, status: 1, stderr: filepath.Join(emptyDir, "kubelet-serving-ca.crt")},
		{name: "pki rotate creates the next CA and prints the steps", args: []string{"pki", "rotate", "--dir", pkiDir}, status: 0, stdout: "kubelet-serving-ca-bundle.crt"},
		{name: "pki rotate --finish promotes it", args: []string{"pki", "rotate", "--finish", "--dir", pkiDir}, status: 0, stdout: "the old one is kept"},
		{name: "pki init with an unknown key algorithm fails naming it", args: []string{"pki", "init", "--dir", t.TempDir(), "--key-algorithm", "dsa"}, status: 1, stderr: `"dsa"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := run(tc.args, &stdout, &stderr); got != tc.status {
				t.Errorf("exit status %d, want %d (stderr: %s)", got, tc.status, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tc.stderr)
			}
			if !strings.Contains(stdout.String(), tc.stdout) {
				t.Errorf("stdout %q lacks %q", stdout.String(), tc.stdout)
			}
		})
	}
	if entries, err := os.ReadDir(emptyDir); err != nil || len(entries) != 0 {
		t.Errorf("a refused rotation left %d files in %s (%v)", len(entries), emptyDir, err)
	}
}
