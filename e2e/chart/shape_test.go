//go:build e2e

package chart

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestWorkloadFitsEveryControlPlaneShape: with hostNetwork two pods of the
// chart can never share a node, so the default workload must not ask for
// more pods than there are control-plane nodes, on one node or on three.
// A DaemonSet on the control-plane nodes asks for exactly one per node; a
// Deployment must keep its replicas on distinct nodes.
func TestWorkloadFitsEveryControlPlaneShape(t *testing.T) {
	files := ciValuesFiles(t)
	for _, tc := range []struct {
		name, values, wantKind string
		wantReplicas           int
	}{
		{name: "the defaults are one pod per control-plane node", values: "default", wantKind: "DaemonSet"},
		{name: "a Deployment spreads its replicas over nodes", values: "deployment", wantKind: "Deployment", wantReplicas: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file, ok := files[tc.values]
			if !ok {
				t.Fatalf("no ci/%s-values.yaml", tc.values)
			}
			r := render(t, file)
			if r.workload != tc.wantKind {
				t.Fatalf("workload %s, want %s", r.workload, tc.wantKind)
			}
			spec := r.pod.Spec
			if _, ok := spec.NodeSelector["node-role.kubernetes.io/control-plane"]; !ok {
				t.Errorf("nodeSelector %v does not select the control-plane nodes", spec.NodeSelector)
			}
			if !tolerates(spec.Tolerations, "node-role.kubernetes.io/control-plane") {
				t.Errorf("the pod does not tolerate kubeadm's control-plane taint: %+v", spec.Tolerations)
			}
			if tc.wantKind != "Deployment" {
				return
			}
			var d struct {
				Spec struct{ Replicas int } `json:"spec"`
			}
			for _, doc := range documents(helmTemplate(t, "helm3", file)) {
				var meta struct{ Kind string }
				if yaml.Unmarshal([]byte(doc), &meta) == nil && meta.Kind == "Deployment" {
					if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
						t.Fatal(err)
					}
				}
			}
			if d.Spec.Replicas != tc.wantReplicas {
				t.Errorf("replicas %d, want %d", d.Spec.Replicas, tc.wantReplicas)
			}
			aff := spec.Affinity
			if aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 ||
				aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" {
				t.Errorf("the Deployment's replicas are not spread over nodes: %+v", aff)
			}
		})
	}
}

func tolerates(tols []corev1.Toleration, key string) bool {
	for _, tol := range tols {
		if tol.Key == key && (tol.Operator == corev1.TolerationOpExists || tol.Operator == "") {
			return true
		}
	}
	return false
}
