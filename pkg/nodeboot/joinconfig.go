package nodeboot

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"

	"sigs.k8s.io/yaml"
)

const kubeadmAPIVersion = "kubeadm.k8s.io/v1beta4"

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// completeJoinConfig fills a kubeadm JoinConfiguration template with this
// node's settings: nodeRegistration.kubeletExtraArgs gets cloud-provider,
// provider-id and node-ip (replacing any entries of those names, keeping
// the rest), and patches.directory points at the patch stackward-node wrote.
// Other documents in the template are copied unchanged. kubeadm cannot merge
// two JoinConfigurations and has no patch target for its own configuration,
// so the node-specific values can only reach kubeletExtraArgs this way.
func completeJoinConfig(tmpl []byte, name string, s Settings, patchDir string) ([]byte, error) {
	docs := docSeparator.Split(string(tmpl), -1)
	var out [][]byte
	found := 0
	for i, doc := range docs {
		if len(bytes.TrimSpace([]byte(doc))) == 0 {
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, fmt.Errorf("--join-config %s: document %d: %w", name, i+1, err)
		}
		if obj == nil { // comments only
			continue
		}
		if obj["kind"] != "JoinConfiguration" {
			out = append(out, bytes.TrimSpace([]byte(doc)))
			continue
		}
		found++
		if obj["apiVersion"] != kubeadmAPIVersion {
			return nil, fmt.Errorf("--join-config %s: JoinConfiguration apiVersion is %v; stackward-node writes %s (kubeletExtraArgs as a list of name/value)",
				name, obj["apiVersion"], kubeadmAPIVersion)
		}
		if err := fillJoin(obj, s, patchDir); err != nil {
			return nil, fmt.Errorf("--join-config %s: %w", name, err)
		}
		b, err := yaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("--join-config %s: encode: %w", name, err)
		}
		out = append(out, bytes.TrimSpace(b))
	}
	if found != 1 {
		return nil, fmt.Errorf("--join-config %s: want exactly one JoinConfiguration, found %d", name, found)
	}
	var buf bytes.Buffer
	buf.WriteString(header(s))
	buf.WriteString("# Completed from " + name + ": nodeRegistration.kubeletExtraArgs and patches.directory.\n")
	for i, d := range out {
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(d)
		buf.WriteString("\n")
	}
	return buf.Bytes(), nil
}

func fillJoin(obj map[string]any, s Settings, patchDir string) error {
	nr, err := childMap(obj, "nodeRegistration")
	if err != nil {
		return err
	}
	var args []any
	if v, ok := nr["kubeletExtraArgs"]; ok && v != nil {
		list, ok := v.([]any)
		if !ok {
			return fmt.Errorf("nodeRegistration.kubeletExtraArgs is %T, want a list of {name, value} (v1beta4)", v)
		}
		ours := s.KubeletArgs()
		for _, e := range list {
			m, ok := e.(map[string]any)
			if !ok {
				return fmt.Errorf("nodeRegistration.kubeletExtraArgs entry %v is not {name, value}", e)
			}
			if slices.ContainsFunc(ours, func(kv [2]string) bool { return m["name"] == kv[0] }) {
				continue // replaced below
			}
			args = append(args, m)
		}
	}
	for _, kv := range s.KubeletArgs() {
		args = append(args, map[string]any{"name": kv[0], "value": kv[1]})
	}
	nr["kubeletExtraArgs"] = args
	p, err := childMap(obj, "patches")
	if err != nil {
		return err
	}
	p["directory"] = patchDir
	return fillControlPlane(obj, s)
}

// fillControlPlane gives a control-plane join the node IP as the
// apiserver's advertise address when the template leaves it empty: on a
// kubeadm control-plane host the kubelet and the apiserver share that
// address, and only stackward-node knows it before the join. A template's
// own address is kept (a host may advertise on another network).
func fillControlPlane(obj map[string]any, s Settings) error {
	v, ok := obj["controlPlane"]
	if !ok || v == nil {
		return nil // a worker
	}
	cp, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("controlPlane is %T, want a mapping", v)
	}
	ep, err := childMap(cp, "localAPIEndpoint")
	if err != nil {
		return fmt.Errorf("controlPlane.%w", err)
	}
	if a, _ := ep["advertiseAddress"].(string); a != "" {
		return nil
	}
	if len(s.NodeIPs) == 0 {
		return fmt.Errorf("controlPlane.localAPIEndpoint.advertiseAddress is empty and there is no node IP to fill in")
	}
	ep["advertiseAddress"] = s.NodeIPs[0].String()
	return nil
}

func childMap(obj map[string]any, key string) (map[string]any, error) {
	v, ok := obj[key]
	if !ok || v == nil {
		m := map[string]any{}
		obj[key] = m
		return m, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is %T, want a mapping", key, v)
	}
	return m, nil
}
