package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fixtures = "../../pkg/nodeboot/testdata/configdrive/"

func TestRun(t *testing.T) {
	out := t.TempDir()
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     []string
		stderr     []string
		wroteFiles bool
	}{
		{name: "help explains every flag", args: []string{"--help"}, code: 0,
			stderr: []string{"-search-order", "-config-drive-dir", "-metadata-url", "-metadata-source-ip", "-timeout", "-attempts",
				"-network", "-prefer-cidr", "-ip-family", "-region", "-output-dir", "-join-config", "-print", "kubelet.env", "20-stackward.conf"}},
		{name: "unknown flag is a usage error", args: []string{"--nope"}, code: 2},
		{name: "stray argument is a usage error", args: []string{"extra"}, code: 2, stderr: []string{"unexpected arguments"}},
		{name: "print gives shell settings", code: 0,
			args:   []string{"--search-order", "configDrive", "--config-drive-dir", fixtures + "node-1", "--print"},
			stdout: []string{"STACKWARD_PROVIDER_ID=openstack:///3c5a4d0e-7f0b-4e7e-9d7a-1b2c3d4e5f60\n", "STACKWARD_NODE_IP=10.0.0.11\n"}},
		{name: "missing uuid is refused naming the field and the file", code: 1,
			args:   []string{"--search-order", "configDrive", "--config-drive-dir", fixtures + "no-uuid", "--print"},
			stderr: []string{`field "uuid"`, "no-uuid/openstack/latest/meta_data.json"}},
		{name: "invalid flags are all reported", code: 1,
			args:   []string{"--search-order", "configDrive,nova", "--ip-family", "ipv5", "--print"},
			stderr: []string{`"nova" is neither`, "--ip-family"}},
		{name: "files are written into the output directory", code: 0, wroteFiles: true,
			args: []string{"--search-order", "configDrive", "--config-drive-dir", fixtures + "node-1", "--output-dir", out}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			for _, want := range tc.stdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
			if tc.wroteFiles {
				b, err := os.ReadFile(filepath.Join(out, "kubelet.env"))
				if err != nil || !strings.Contains(string(b), "--node-ip=10.0.0.11") {
					t.Errorf("kubelet.env: %v\n%s", err, b)
				}
			}
		})
	}
}
