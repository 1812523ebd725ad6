package docscheck

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/stackward/stackward/pkg/provider/app"
)

// docsWithFlags are the documents that must name --flags (all of which
// must exist); every other page of the documentation is checked too.
var docsWithFlags = []string{
	"README.md", "charts/stackward/README.md", "bootstrap/README.md",
	"docs/reference/flags.md", "docs/explanation/approver.md", "docs/reference/routes.md",
	"docs/reference/observability.md", "docs/install/upstream-ccm.md",
	"docs/reference/kubelet-serving-ca-bundle.md", "docs/install/capi.md",
}

// otherPrograms are flags of programs other than ours that the documents
// legitimately name (a kubeadm or helm command line, a kubelet argument).
// A flag ending in "-" is a family (--cluster-signing-...). Add to it only
// for a flag of another program: a flag of ours comes from the binaries.
var otherPrograms = []string{
	// kubelet
	"node-ip", "provider-id",
	// kube-apiserver
	"kubelet-certificate-authority", "runtime-config",
	// metrics-server
	"kubelet-insecure-tls", "kubelet-preferred-address-types", "metric-resolution",
	// kube-controller-manager
	"cluster-signing-",
	// kubeadm
	"control-plane", "upload-certs", "config", "print-join-command", "ttl",
	// kubectl
	"from-file", "field-selector", "namespace", "type",
	// clusterctl
	"flavor", "addon",
	// helm
	"set", "wait", "api-versions", "strict",
	// openstack server create, openstack loadbalancer listener list
	"nic", "loadbalancer",
	// go test, apt-get, e2e/tools/build.sh
	"tags", "no-install-recommends", "print-dir",
}

// docFlag is a --flag written in a document, or a family (--prefix-).
var docFlag = regexp.MustCompile(`(?:^|[^\w-])--([a-z0-9][a-z0-9-]*)`)

// TestDocumentsNameOnlyFlagsThatExist: every --flag the READMEs and docs/
// name is a flag of stackward-ccm, stackward-approver, stackward-node or the stackward
// CLI, or one of another program's in otherPrograms, so the docs do not keep
// telling operators to pass a flag that was renamed or removed.
func TestDocumentsNameOnlyFlagsThatExist(t *testing.T) {
	ours := ourFlags(t)
	for _, f := range otherPrograms {
		if slices.Contains(ours, f) {
			t.Errorf("otherPrograms lists --%s, which is ours: drop it, so that renaming ours fails here", f)
		}
	}
	all := append(slices.Clone(otherPrograms), ours...)
	known := func(name string) bool {
		return slices.ContainsFunc(all, func(f string) bool {
			return f == name ||
				(strings.HasSuffix(f, "-") && strings.HasPrefix(name, f)) || // a flag of a listed family
				(strings.HasSuffix(name, "-") && strings.HasPrefix(f, name)) // a family some flag is in
		})
	}
	files := slices.Clone(docsWithFlags)
	for _, f := range documentation(t) {
		if !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	for _, file := range files {
		var checked int
		for i, line := range strings.Split(readFile(t, file), "\n") {
			for _, m := range docFlag.FindAllStringSubmatch(line, -1) {
				checked++
				if !known(m[1]) {
					t.Errorf("%s:%d names --%s, which none of our binaries has (renamed? or another program's: add it to otherPrograms)", file, i+1, m[1])
				}
			}
		}
		if checked == 0 && slices.Contains(docsWithFlags, file) {
			t.Errorf("%s: no --flag found; is the pattern still right?", file)
		}
	}
}

// ourFlags are the long flag names of every binary we ship: the CCM's from
// its command (as it runs), the others from their -h output, as their flag
// sets live in their main packages.
func ourFlags(t *testing.T) []string {
	t.Helper()
	cmd, err := app.NewCommand(context.Background(), app.Options{})
	if err != nil {
		t.Fatalf("stackward-ccm command: %v", err)
	}
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if !slices.Contains(names, "cloud-config") {
		t.Fatalf("stackward-ccm flags %v lack --cloud-config", names)
	}

	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/stackward", "./cmd/stackward-approver", "./cmd/stackward-node")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"stackward-approver"}, {"stackward-approver", "explain"}, {"stackward-node"},
		{"stackward", "doctor"}, {"stackward", "pki", "init"}, {"stackward", "pki", "export"},
		{"stackward", "pki", "import"}, {"stackward", "pki", "rotate"},
	} {
		found := helpFlags(t, filepath.Join(bin, args[0]), args[1:]...)
		if len(found) == 0 {
			t.Fatalf("%v -h lists no flags: has its help format changed?", args)
		}
		names = append(names, found...)
	}
	// Handled before any flag set: stackward --version/--help, -h everywhere.
	return append(names, "version", "help")
}

// A flag's line in -h output: the flag package's "  -name type", pflag's
// "  -v, --name type" or "      --name type". Description lines are
// indented by a tab (flag) or far more (pflag), so a flag named in a
// description is not taken for one.
var helpFlag = regexp.MustCompile(`^(?:  -|  -\w, --| {6}--)([a-z0-9][a-z0-9-]*)\b`)

// helpFlags runs bin with args and -h and returns the flags its help lists.
func helpFlags(t *testing.T, bin string, args ...string) []string {
	t.Helper()
	// -h exits non-zero with the flag package; the output is what counts.
	out, _ := exec.Command(bin, append(args, "-h")...).CombinedOutput()
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if m := helpFlag.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

// TestFlagsReferenceNamesEachBinarysOwnFlags: each flag in
// docs/reference/flags.md's table for stackward-approver or stackward-ccm
// is a flag of that binary, not only of some binary of ours.
func TestFlagsReferenceNamesEachBinarysOwnFlags(t *testing.T) {
	const file = "docs/reference/flags.md"
	doc := readFile(t, file)

	cmd, err := app.NewCommand(context.Background(), app.Options{})
	if err != nil {
		t.Fatalf("stackward-ccm command: %v", err)
	}
	var ccm []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) { ccm = append(ccm, f.Name) })

	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/stackward-approver")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	approver := helpFlags(t, filepath.Join(bin, "stackward-approver"))

	for heading, flags := range map[string][]string{"## stackward-approver": approver, "## stackward-ccm": ccm} {
		tbl, err := tableAfter(doc, heading)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, row := range tbl {
			for _, span := range codeSpans(row[0]) {
				name := strings.TrimPrefix(span, "--")
				if name == span || !slices.Contains(flags, name) {
					t.Errorf("%s, %s: %s is not a flag of %s", file, heading, span, strings.TrimPrefix(heading, "## "))
				}
			}
		}
	}
}
