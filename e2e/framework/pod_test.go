package framework

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestContainerArgsAreWhatTheKubeletWouldRun: $(VAR) references expand as
// the kubelet expands them (the downward API's pod IP is the lab pod's
// 127.0.0.1), and paths under a mount point at the materialized volume.
func TestContainerArgsAreWhatTheKubeletWouldRun(t *testing.T) {
	c := corev1.Container{
		Args: []string{"--bind-address=$(POD_IP)", "--cluster-name=$(CLUSTER)", "--cloud-config=/etc/stackward/cloud.conf", "--unknown=$(NOT_SET)", "--cert-dir=/tmp", "--other=/tmpfoo"},
		Env: []corev1.EnvVar{
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "CLUSTER", Value: "lab"},
		},
	}
	got := containerArgs(c, map[string]string{"/etc/stackward": "/tmp/vol1", "/tmp": "/tmp/vol2"})
	want := []string{"--bind-address=127.0.0.1", "--cluster-name=lab", "--cloud-config=/tmp/vol1/cloud.conf", "--unknown=$(NOT_SET)", "--cert-dir=/tmp/vol2", "--other=/tmpfoo"}
	if !slices.Equal(got, want) {
		t.Errorf("args %q, want %q", got, want)
	}
}
