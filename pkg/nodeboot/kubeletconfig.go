package nodeboot

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// kubeletPatchConfig is the part of this node's KubeletConfiguration that
// stackward-node sets, as the kubelet's own typed API: only providerID has
// a field (the node IP and --cloud-provider exist only as flags).
func kubeletPatchConfig(s Settings) *kubeletv1beta1.KubeletConfiguration {
	return &kubeletv1beta1.KubeletConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: kubeletv1beta1.SchemeGroupVersion.String(), Kind: "KubeletConfiguration"},
		ProviderID: s.ProviderID,
	}
}

// validateKubeletPatch checks what stackward-node is about to write.
func validateKubeletPatch(kc *kubeletv1beta1.KubeletConfiguration) error {
	var errs []error
	id, ok := strings.CutPrefix(kc.ProviderID, "openstack://")
	if i := strings.LastIndexByte(id, '/'); !ok || i < 0 || id[i+1:] == "" {
		errs = append(errs, fmt.Errorf("providerID %q is not openstack://[<region>]/<server ID>", kc.ProviderID))
	}
	if kc.ServerTLSBootstrap {
		errs = append(errs, errors.New("serverTLSBootstrap is cluster-wide (init-configuration.yaml), not a node patch"))
	}
	return errors.Join(errs...)
}

// encodeKubeletPatch renders kc as a strategic-merge patch of the fields it
// sets. The typed struct cannot be marshalled as it is: its non-pointer
// durations and nested structs encode as "0s" and {} although omitempty,
// and a patch carrying them would zero the node's cluster-wide settings.
// So every value equal to the zero configuration's is dropped.
func encodeKubeletPatch(kc *kubeletv1beta1.KubeletConfiguration) ([]byte, error) {
	set, err := toMap(kc)
	if err != nil {
		return nil, err
	}
	zero, err := toMap(&kubeletv1beta1.KubeletConfiguration{})
	if err != nil {
		return nil, err
	}
	pruneZero(set, zero)
	return yaml.Marshal(set)
}

func toMap(kc *kubeletv1beta1.KubeletConfiguration) (map[string]any, error) {
	b, err := json.Marshal(kc)
	if err != nil {
		return nil, fmt.Errorf("encode KubeletConfiguration: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("encode KubeletConfiguration: %w", err)
	}
	return m, nil
}

func pruneZero(set, zero map[string]any) {
	for k, v := range set {
		z, inZero := zero[k]
		if !inZero {
			continue
		}
		sub, ok1 := v.(map[string]any)
		zsub, ok2 := z.(map[string]any)
		if ok1 && ok2 {
			pruneZero(sub, zsub)
			if len(sub) == 0 {
				delete(set, k)
			}
			continue
		}
		if reflect.DeepEqual(v, z) {
			delete(set, k)
		}
	}
}

// CheckKubeletConfiguration decodes a KubeletConfiguration document (name
// is its file, for errors) strictly with the kubelet's typed API, so a
// misspelled or misplaced field fails here instead of being ignored by the
// kubelet, and refuses settings that leave kubelets without a serving
// certificate the approver can verify.
func CheckKubeletConfiguration(doc []byte, name string) (*kubeletv1beta1.KubeletConfiguration, error) {
	var kc kubeletv1beta1.KubeletConfiguration
	// Case-sensitive as the kubelet's own decoder: sigs.k8s.io/yaml alone
	// would take serverTlsBootstrap for serverTLSBootstrap.
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: KubeletConfiguration: %w", name, err)
	}
	strict, err := kjson.UnmarshalStrict(j, &kc, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("%s: KubeletConfiguration: %w", name, err)
	}
	if err := errors.Join(strict...); err != nil {
		return nil, fmt.Errorf("%s: KubeletConfiguration: %w", name, err)
	}
	var errs []error
	if kc.APIVersion != kubeletv1beta1.SchemeGroupVersion.String() || kc.Kind != "KubeletConfiguration" {
		errs = append(errs, fmt.Errorf("%s: %s %s, want %s KubeletConfiguration", name, kc.APIVersion, kc.Kind, kubeletv1beta1.SchemeGroupVersion))
	}
	if !kc.ServerTLSBootstrap {
		errs = append(errs, fmt.Errorf("%s: KubeletConfiguration: serverTLSBootstrap is not true: the kubelet would serve a self-signed certificate and never ask for one the approver verifies", name))
	}
	return &kc, errors.Join(errs...)
}
