package nodeboot

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The cluster-wide KubeletConfiguration operators copy from bootstrap/ is
// what the kubelet's own API accepts, and turns on serving certificates.
func TestBootstrapKubeletConfigurationIsValidForTheKubeletAPI(t *testing.T) {
	const path = "../../bootstrap/init-configuration.yaml"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, doc := range docSeparator.Split(string(data), -1) {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil || head.Kind != "KubeletConfiguration" {
			continue
		}
		found++
		kc, err := CheckKubeletConfiguration([]byte(doc), path)
		if err != nil {
			t.Fatal(err)
		}
		if !kc.RotateCertificates {
			t.Errorf("%s: rotateCertificates is off: client certificates would expire", path)
		}
	}
	if found != 1 {
		t.Errorf("%s has %d KubeletConfiguration documents, want 1", path, found)
	}
}

func TestCheckKubeletConfigurationRefusesWhatTheKubeletWouldIgnore(t *testing.T) {
	const head = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"a misspelled field is refused", head + "serverTlsBootstrap: true\n", `unknown field "serverTlsBootstrap"`},
		{"serving certificates turned off are refused", head + "serverTLSBootstrap: false\n", "serverTLSBootstrap is not true"},
		{"another API version is refused", "apiVersion: kubelet.config.k8s.io/v1alpha1\nkind: KubeletConfiguration\nserverTLSBootstrap: true\n", "want kubelet.config.k8s.io/v1beta1"},
		{"a wrongly typed value is refused", head + "serverTLSBootstrap: true\nrotateCertificates: sometimes\n", "rotateCertificates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CheckKubeletConfiguration([]byte(tc.doc), "kubelet.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "kubelet.yaml") {
				t.Errorf("err = %v, want one naming kubelet.yaml and %q", err, tc.want)
			}
		})
	}
}

func TestKubeletPatchSetsOnlyTheProviderID(t *testing.T) {
	for _, tc := range []struct {
		name, providerID, wantErr string
	}{
		{name: "a provider ID without a region", providerID: "openstack:///u1"},
		{name: "a provider ID with a region", providerID: "openstack://RegionOne/u1"},
		{name: "an empty provider ID is refused", providerID: "", wantErr: "providerID"},
		{name: "a provider ID of another cloud is refused", providerID: "aws:///u1", wantErr: "providerID"},
		{name: "a provider ID without a server ID is refused", providerID: "openstack://RegionOne/", wantErr: "providerID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Settings{Instance: &Instance{Meta: MetaData{UUID: "u1"}}, ProviderID: tc.providerID, NodeIPs: addrs("10.0.0.11")}
			out, err := renderKubeletPatch(s)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var fields map[string]any
			if err := yaml.Unmarshal(out, &fields); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", "providerID": tc.providerID}
			if len(fields) != len(want) {
				t.Errorf("the patch sets %v; anything beyond %v would override the cluster's kubelet settings", fields, want)
			}
			for k, v := range want {
				if fields[k] != v {
					t.Errorf("%s = %v, want %v", k, fields[k], v)
				}
			}
		})
	}
}
