package nodeboot

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/klog/v2"
)

// Names of the files written into --output-dir.
const (
	KubeletEnvFile = "kubelet.env"
	DropInFile     = "20-stackward.conf"
	PatchesDir     = "kubeadm-patches"
	KubeletPatch   = "kubeletconfiguration+strategic.yaml"
	JoinConfigFile = "join-configuration.yaml"
)

func header(s Settings) string {
	return fmt.Sprintf("# Written by stackward-node from %s (%s) for OpenStack instance %s.\n"+
		"# Rewritten on every run; do not edit.\n", s.Instance.Source, s.Instance.Origin, s.Instance.Meta.UUID)
}

// kubeletExtraArgs is the value of KUBELET_EXTRA_ARGS.
func kubeletExtraArgs(s Settings) string {
	var parts []string
	for _, kv := range s.KubeletArgs() {
		parts = append(parts, "--"+kv[0]+"="+kv[1])
	}
	return strings.Join(parts, " ")
}

// renderKubeletEnv is an environment file both systemd (EnvironmentFile=)
// and a shell (.) read the same way: every value is safeValue-checked, so
// double quotes need no escaping.
func renderKubeletEnv(s Settings) []byte {
	return []byte(header(s) + "KUBELET_EXTRA_ARGS=\"" + kubeletExtraArgs(s) + "\"\n")
}

// renderDropIn points the kubelet unit at kubelet.env. It uses
// EnvironmentFile= rather than Environment= on purpose: kubeadm's
// 10-kubeadm.conf reads EnvironmentFile=-/etc/default/kubelet (or
// /etc/sysconfig/kubelet), which the kubelet packages create with an empty
// KUBELET_EXTRA_ARGS=, and systemd lets EnvironmentFile= override
// Environment= whatever the order. An EnvironmentFile= in a later drop-in is
// read later and wins.
func renderDropIn(s Settings, envPath string) []byte {
	return []byte(header(s) +
		"# Install as /etc/systemd/system/kubelet.service.d/" + DropInFile + ", then\n" +
		"# systemctl daemon-reload. The kubelet unit of kubeadm passes $KUBELET_EXTRA_ARGS.\n" +
		"[Service]\n" +
		"EnvironmentFile=" + envPath + "\n")
}

// renderKubeletPatch is a kubeadm strategic-merge patch for the
// "kubeletconfiguration" target: kubeadm join applies it to the
// KubeletConfiguration it downloads from the cluster before writing
// /var/lib/kubelet/config.yaml. Only providerID has a KubeletConfiguration
// field; the node IP exists only as a flag. It is built with the kubelet's
// typed API and validated before it is written.
func renderKubeletPatch(s Settings) ([]byte, error) {
	kc := kubeletPatchConfig(s)
	if err := validateKubeletPatch(kc); err != nil {
		return nil, fmt.Errorf("kubelet configuration patch: %w", err)
	}
	b, err := encodeKubeletPatch(kc)
	if err != nil {
		return nil, fmt.Errorf("kubelet configuration patch: %w", err)
	}
	return append([]byte(header(s)), b...), nil
}

// printSettings writes KEY=VALUE lines a shell can eval.
func printSettings(w io.Writer, s Settings) error {
	m := s.Instance.Meta
	lines := [][2]string{
		{"STACKWARD_SOURCE", s.Instance.Source},
		{"STACKWARD_INSTANCE_ID", m.UUID},
		{"STACKWARD_NODE_NAME", m.Name},
		{"STACKWARD_HOSTNAME", m.Hostname},
		{"STACKWARD_AVAILABILITY_ZONE", m.AvailabilityZone},
		{"STACKWARD_PROJECT_ID", m.ProjectID},
		{"STACKWARD_PROVIDER_ID", s.ProviderID},
		{"STACKWARD_NODE_IP", s.NodeIP()},
		{"KUBELET_EXTRA_ARGS", kubeletExtraArgs(s)},
	}
	var b strings.Builder
	for _, kv := range lines {
		b.WriteString(kv[0] + "=" + shellQuote(kv[1]) + "\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("print settings: %w", err)
	}
	return nil
}

// shellQuote leaves plain values alone and single-quotes the rest (names and
// zones come from the cloud user and may contain anything).
func shellQuote(v string) string {
	if v != "" && strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:/=") == "" {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// writeOutputs writes every file, each atomically.
func writeOutputs(ctx context.Context, cfg Config, s Settings) error {
	dir, err := cfg.outputDir()
	if err != nil {
		return err
	}
	patchDir := filepath.Join(dir, PatchesDir)
	if err := os.MkdirAll(patchDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", patchDir, err)
	}
	envPath := filepath.Join(dir, KubeletEnvFile)
	patch, err := renderKubeletPatch(s)
	if err != nil {
		return err
	}
	type file struct {
		path string
		data []byte
		mode os.FileMode
	}
	files := []file{
		{envPath, renderKubeletEnv(s), 0o644},
		{filepath.Join(dir, DropInFile), renderDropIn(s, envPath), 0o644},
		{filepath.Join(patchDir, KubeletPatch), patch, 0o644},
	}
	if cfg.JoinConfigTemplate != "" {
		tmpl, err := os.ReadFile(cfg.JoinConfigTemplate)
		if err != nil {
			return fmt.Errorf("--join-config: %w", err)
		}
		out, err := completeJoinConfig(tmpl, cfg.JoinConfigTemplate, s, patchDir)
		if err != nil {
			return err
		}
		// It carries the template's bootstrap token.
		files = append(files, file{filepath.Join(dir, JoinConfigFile), out, 0o600})
	}
	for _, f := range files {
		if err := writeAtomic(f.path, f.data, f.mode); err != nil {
			return err
		}
		klog.FromContext(ctx).V(1).Info("Wrote file", "path", f.path)
	}
	return nil
}

// writeAtomic replaces path with data so that a reader (systemd, kubeadm)
// sees the old file or the new one, never a part: temp file in the same
// directory, fsync, rename, fsync the directory.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: the rename is done either way
		d.Close()
	}
	return nil
}
