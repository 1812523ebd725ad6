package nodeboot

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The example in bootstrap/cloud-init.yaml must keep working with what this
// package writes: its join template is completable, its script is valid sh
// and uses the files under the names this package writes them.
func TestCloudInitExample(t *testing.T) {
	const path = "../../bootstrap/cloud-init.yaml"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "#cloud-config\n") {
		t.Errorf("%s does not start with #cloud-config", path)
	}
	var ci struct {
		WriteFiles []struct{ Path, Content string } `json:"write_files"`
		RunCmd     []any                            `json:"runcmd"`
	}
	if err := yaml.Unmarshal(b, &ci); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	files := map[string]string{}
	for _, f := range ci.WriteFiles {
		files[f.Path] = f.Content
	}
	const tmplPath, scriptPath = "/etc/stackward/join-configuration.template.yaml", "/usr/local/sbin/stackward-join"
	s := Settings{Instance: &Instance{Meta: MetaData{UUID: "u1"}}, ProviderID: "openstack:///u1", NodeIPs: addrs("10.0.0.11")}
	if _, err := completeJoinConfig([]byte(files[tmplPath]), tmplPath, s, "/etc/stackward/"+PatchesDir); err != nil {
		t.Errorf("%s: %v", path, err)
	}
	script := files[scriptPath]
	for _, want := range []string{
		"set -eu",
		"--join-config " + tmplPath,
		"/etc/stackward/" + DropInFile,
		"kubeadm join --config /etc/stackward/" + JoinConfigFile,
	} {
		if !strings.Contains(script, want) {
			t.Errorf("%s: script %s lacks %q", path, scriptPath, want)
		}
	}
	if !strings.Contains(files[tmplPath], "directory: /etc/stackward/"+PatchesDir) {
		t.Errorf("%s: join template does not point patches at /etc/stackward/%s", path, PatchesDir)
	}
	cmd := exec.Command("sh", "-n")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: sh -n %s: %v\n%s", path, scriptPath, err, out)
	}
	if len(ci.RunCmd) != 1 {
		t.Errorf("%s: runcmd has %d entries, want the one script", path, len(ci.RunCmd))
	}
}
