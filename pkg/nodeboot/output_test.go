package nodeboot

import (
	"bytes"
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// The output directory is fixed so golden files can name it.
const goldenOutputDir = "/etc/stackward"

// checkGolden compares every file under got with testdata/golden/<name>.
// Absolute paths under got are rewritten to goldenOutputDir first.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	want := filepath.Join("testdata", "golden", name)
	files := map[string][]byte{}
	err := filepath.WalkDir(got, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(got, p)
		files[rel] = bytes.ReplaceAll(b, []byte(got), []byte(goldenOutputDir))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		os.RemoveAll(want)
		for rel, b := range files {
			p := filepath.Join(want, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	seen := 0
	err = filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		seen++
		rel, _ := filepath.Rel(want, p)
		w, _ := os.ReadFile(p)
		if g, ok := files[rel]; !ok {
			t.Errorf("%s: not written", rel)
		} else if !bytes.Equal(g, w) {
			t.Errorf("%s differs from %s (go test -run %s -update):\n--- got\n%s--- want\n%s", rel, p, t.Name(), g, w)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(files) {
		t.Errorf("wrote %d files, golden has %d", len(files), seen)
	}
}

func TestRunWritesGoldenFiles(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
	}{
		{name: "node-1", mutate: func(*Config) {}},
		{name: "node-1-region-join", mutate: func(c *Config) {
			c.Region = "RegionOne"
			c.JoinConfigTemplate = "testdata/join-configuration.yaml"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			cfg := testConfig("")
			cfg.SearchOrder = []string{SourceConfigDrive}
			cfg.ConfigDriveDir = node1Dir
			cfg.Print = false
			cfg.OutputDir = out
			tc.mutate(&cfg)
			if err := Run(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			// Running again replaces the files and leaves no temporary file.
			if err := Run(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.name, out)
			if fi, err := os.Stat(filepath.Join(out, JoinConfigFile)); err == nil && fi.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v; it holds a bootstrap token", JoinConfigFile, fi.Mode().Perm())
			}
		})
	}
}

// The lead's bootstrap/join-configuration.yaml must stay completable.
func TestBootstrapJoinConfigurationIsCompletable(t *testing.T) {
	const path = "../../bootstrap/join-configuration.yaml"
	tmpl, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := Settings{Instance: &Instance{Meta: MetaData{UUID: "u1"}}, ProviderID: "openstack:///u1", NodeIPs: addrs("10.0.0.11")}
	out, err := completeJoinConfig(tmpl, path, s, "/etc/stackward/kubeadm-patches")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"value: openstack:///u1", "value: 10.0.0.11", "directory: /etc/stackward/kubeadm-patches", "bootstrapToken:"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("completed %s lacks %q:\n%s", path, want, out)
		}
	}
}

// A control-plane host's apiserver advertises the address its kubelet
// serves on, which only stackward-node knows before the join.
func TestControlPlaneJoinAdvertisesTheNodeIP(t *testing.T) {
	const path = "../../bootstrap/join-control-plane-configuration.yaml"
	bootstrapTmpl, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := Settings{Instance: &Instance{Meta: MetaData{UUID: "u1"}}, ProviderID: "openstack:///u1", NodeIPs: addrs("10.0.0.11", "2001:db8::11")}
	for _, tc := range []struct {
		name, tmpl, wantAddress string
		worker                  bool
	}{
		{name: "bootstrap's control-plane join gets the first node IP", tmpl: string(bootstrapTmpl), wantAddress: "10.0.0.11"},
		{name: "an address the template sets is kept",
			tmpl:        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ncontrolPlane:\n  localAPIEndpoint:\n    advertiseAddress: 10.1.0.5\n",
			wantAddress: "10.1.0.5"},
		{name: "a control-plane section without an endpoint gets one",
			tmpl:        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ncontrolPlane:\n  certificateKey: abc\n",
			wantAddress: "10.0.0.11"},
		{name: "a worker join gets no control-plane section", tmpl: "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n", worker: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := completeJoinConfig([]byte(tc.tmpl), path, s, "/etc/stackward/kubeadm-patches")
			if err != nil {
				t.Fatal(err)
			}
			var jc struct {
				ControlPlane *struct {
					LocalAPIEndpoint struct {
						AdvertiseAddress string `json:"advertiseAddress"`
					} `json:"localAPIEndpoint"`
				} `json:"controlPlane"`
			}
			if err := yaml.Unmarshal(out, &jc); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.worker && jc.ControlPlane != nil:
				t.Errorf("a worker's join configuration got a controlPlane section:\n%s", out)
			case !tc.worker && (jc.ControlPlane == nil || jc.ControlPlane.LocalAPIEndpoint.AdvertiseAddress != tc.wantAddress):
				t.Errorf("advertiseAddress is not %s:\n%s", tc.wantAddress, out)
			}
		})
	}
}

func TestPrint(t *testing.T) {
	var buf bytes.Buffer
	cfg := testConfig("")
	cfg.SearchOrder = []string{SourceConfigDrive}
	cfg.ConfigDriveDir = node1Dir
	cfg.Stdout = &buf
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "print.env"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "print", dir)
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"node-1":          "node-1",
		"":                "''",
		"my node":         "'my node'",
		"it's":            `'it'\''s'`,
		"$(reboot)":       "'$(reboot)'",
		"openstack:///u1": "openstack:///u1",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestCompleteJoinConfig(t *testing.T) {
	s := Settings{
		Instance:   &Instance{Source: SourceConfigDrive, Origin: "/mnt", Meta: MetaData{UUID: "u1"}},
		ProviderID: "openstack:///u1",
		NodeIPs:    addrs("10.0.0.11", "2001:db8::11"),
	}
	tmpl := `# comment
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
nodeRegistration:
  kubeletExtraArgs:
    - name: node-ip
      value: 192.0.2.99
    - name: v
      value: "2"
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
serverTLSBootstrap: true
`
	out, err := completeJoinConfig([]byte(tmpl), "join.yaml", s, "/etc/stackward/kubeadm-patches")
	if err != nil {
		t.Fatal(err)
	}
	docs := docSeparator.Split(string(out), -1)
	if len(docs) != 2 || !strings.Contains(docs[1], "serverTLSBootstrap: true") {
		t.Fatalf("other documents not kept:\n%s", out)
	}
	var jc struct {
		NodeRegistration struct {
			KubeletExtraArgs []struct{ Name, Value string } `json:"kubeletExtraArgs"`
		} `json:"nodeRegistration"`
		Patches struct{ Directory string } `json:"patches"`
	}
	if err := yaml.Unmarshal([]byte(docs[0]), &jc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range jc.NodeRegistration.KubeletExtraArgs {
		if _, dup := got[a.Name]; dup {
			t.Errorf("kubeletExtraArgs has %s twice", a.Name)
		}
		got[a.Name] = a.Value
	}
	want := map[string]string{"v": "2", "cloud-provider": "external", "provider-id": "openstack:///u1", "node-ip": "10.0.0.11,2001:db8::11"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("kubeletExtraArgs %s = %q, want %q", k, got[k], v)
		}
	}
	if jc.Patches.Directory != "/etc/stackward/kubeadm-patches" {
		t.Errorf("patches.directory = %q", jc.Patches.Directory)
	}

	for name, bad := range map[string]string{
		"v1beta3 is refused":        "apiVersion: kubeadm.k8s.io/v1beta3\nkind: JoinConfiguration\n",
		"no JoinConfiguration":      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n",
		"kubeletExtraArgs as a map": "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n    v: \"2\"\n",
		"two JoinConfigurations":    "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n",
		"not YAML":                  "kind: [\n",
	} {
		if _, err := completeJoinConfig([]byte(bad), "join.yaml", s, "/p"); err == nil || !strings.Contains(err.Error(), "join.yaml") {
			t.Errorf("%s: err = %v, want an error naming the file", name, err)
		}
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SearchOrder = []string{"metadata", SourceMetadataService, SourceMetadataService}
	cfg.Attempts = 0
	cfg.IPFamily = "ipv5"
	cfg.PreferCIDRs = []string{"10.0.0.0/33"}
	cfg.Region = "Region One"
	cfg.OutputDir = ""
	err := cfg.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, p := range []string{`"metadata" is neither`, "listed twice", "--attempts", "--ip-family", "--prefer-cidr", "--region", "--output-dir"} {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}
