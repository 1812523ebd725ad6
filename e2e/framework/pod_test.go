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

// TestProjectedFilesAreWhatTheKubeletWrites: items pick keys (a missing
// one left out), and a signer's ClusterTrustBundles project each
// certificate once.
func TestProjectedFilesAreWhatTheKubeletWrites(t *testing.T) {
	got := keyFiles(map[string][]byte{"ca.crt": []byte("a"), "other": []byte("b")}, []corev1.KeyToPath{{Key: "ca.crt", Path: "x/ca.pem"}, {Key: "absent", Path: "y"}})
	if len(got) != 1 || string(got["x/ca.pem"]) != "a" {
		t.Errorf("items: %q", got)
	}
	one := "-----BEGIN CERTIFICATE-----\nAQID\n-----END CERTIFICATE-----\n"
	two := "-----BEGIN CERTIFICATE-----\nBAUG\n-----END CERTIFICATE-----\n"
	if got := string(joinPEMOnce([]string{two + one, one})); got != one+two {
		t.Errorf("bundle %q, want each certificate once, sorted", got)
	}
}
