//go:build e2e

package ccm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/stackward/stackward/e2e/framework"
)

// TestNodeJoinsWithStackwardNodeSettings runs the real stackward-node
// binary as the new VM would (from the VM's own address, against the
// simulated metadata service), starts the kubelet with what it wrote, and
// checks that the CCM initializes that Node under the same provider ID.
func TestNodeJoinsWithStackwardNodeSettings(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	srv := cloud.CreateServer(t, "joiner-1", 5, "m1.medium", "az-2")
	if err := framework.AddAddress(framework.NodeIP(5)); err != nil {
		t.Fatal(err)
	}

	bin := filepath.Join(t.TempDir(), "stackward-node")
	build := exec.Command("go", "build", "-o", bin, "./cmd/stackward-node")
	build.Dir = framework.RepoRoot()
	build.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly") // the lab has no route out
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build stackward-node: %v\n%s", err, out)
	}
	outDir := t.TempDir()
	metadataURL := strings.TrimSuffix(cloud.AuthURL, "/v3")
	run := exec.Command(bin,
		"--search-order", "metadataService",
		"--metadata-url", metadataURL,
		"--metadata-source-ip", framework.NodeIP(5),
		"--join-config", filepath.Join(framework.RepoRoot(), "bootstrap", "join-configuration.yaml"),
		"--output-dir", outDir,
		"--timeout", "2s", "--attempts", "3")
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("stackward-node: %v\n%s", err, out)
	}
	args := joinKubeletArgs(t, filepath.Join(outDir, "join-configuration.yaml"))
	if want := "openstack:///" + srv.ID; args["provider-id"] != want {
		t.Fatalf("stackward-node wrote provider-id %q, want %q", args["provider-id"], want)
	}
	if args["node-ip"] != framework.NodeIP(5) || args["cloud-provider"] != "external" {
		t.Fatalf("stackward-node wrote kubelet args %v, want node-ip %s and cloud-provider external", args, framework.NodeIP(5))
	}
	if out, err := exec.Command(framework.Tool(t, "kubeadm"), "config", "validate", "--config", filepath.Join(outDir, "join-configuration.yaml")).CombinedOutput(); err != nil {
		t.Errorf("the completed join configuration does not validate: %v\n%s", err, out)
	}

	cp.StartCCM(ctx, t, cloud.ReaderCloudConf(t)) // node controllers only read: reader
	cp.StartNode(t, framework.NodeOptions{Name: srv.Name, IP: args["node-ip"], ProviderID: args["provider-id"]})
	n, err := cp.WaitForNode(ctx, srv.Name, 90*time.Second, func(n *corev1.Node) bool {
		return !framework.HasTaint(n, uninitializedTaint) && n.Labels[corev1.LabelTopologyZone] != ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if n.Spec.ProviderID != args["provider-id"] || n.Labels[corev1.LabelTopologyZone] != "az-2" || n.Labels[corev1.LabelInstanceTypeStable] != "m1.medium" {
		t.Errorf("node initialized as providerID %q zone %q type %q", n.Spec.ProviderID, n.Labels[corev1.LabelTopologyZone], n.Labels[corev1.LabelInstanceTypeStable])
	}
}

// joinKubeletArgs reads nodeRegistration.kubeletExtraArgs of a kubeadm
// v1beta4 JoinConfiguration.
func joinKubeletArgs(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var join struct {
		NodeRegistration struct {
			KubeletExtraArgs []struct{ Name, Value string } `json:"kubeletExtraArgs"`
		} `json:"nodeRegistration"`
	}
	if err := yaml.Unmarshal(data, &join); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	args := map[string]string{}
	for _, a := range join.NodeRegistration.KubeletExtraArgs {
		args[a.Name] = a.Value
	}
	return args
}
