package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// metrics-server, as e2e/metricsserver builds it with its release's
// manifests: the metrics e2e runs the real thing against the lab's
// kubelets and checks that it verifies their serving certificates.

// MetricsServerNamespace is where upstream's manifests install it.
const MetricsServerNamespace = "kube-system"

// MetricsServerIP is the lab address metrics-server serves on (its pod's
// IP): the lab's pods share one network namespace, and upstream's
// --secure-port=10250 is the kubelets' port too.
const MetricsServerIP = "198.18.253.10"

const metricsServerDirEnv = "STACKWARD_METRICS_SERVER_DIR"

// MetricsServerMain is the TestMain of a package that runs metrics-server:
// outside the lab (which has no route out) it has e2e/metricsserver/build.sh
// build it when absent (`make lab-tools` normally has), then runs the tests
// as Main does.
func MetricsServerMain(m *testing.M) {
	if !InLab() {
		script := filepath.Join(RepoRoot(), "e2e", "metricsserver", "build.sh")
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(script)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "metrics-server: %s: %v\n%s", script, err, stderr.String())
			os.Exit(2)
		}
		os.Stderr.Write(stderr.Bytes()) // the build's own timing line, if it built
		// The test binary re-executed in the lab inherits it.
		os.Setenv(metricsServerDirEnv, strings.TrimSpace(stdout.String()))
	}
	Main(m)
}

// MetricsServer is metrics-server's binary and upstream manifests.
type MetricsServer struct {
	Bin string
	dir string
}

// MetricsServerTool returns the metrics-server MetricsServerMain built.
func MetricsServerTool(t testing.TB) *MetricsServer {
	t.Helper()
	dir := os.Getenv(metricsServerDirEnv)
	if dir == "" {
		t.Fatalf("%s is not set: run the package with framework.MetricsServerMain as its TestMain", metricsServerDirEnv)
	}
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		t.Fatalf("metrics-server is not built in %s (e2e/metricsserver/build.sh): %v", dir, err)
	}
	return &MetricsServer{Bin: filepath.Join(dir, "metrics-server"), dir: dir}
}

// Deployment is upstream's Deployment (manifests/base/deployment.yaml).
func (ms *MetricsServer) Deployment(t testing.TB) *appsv1.Deployment {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ms.dir, "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		t.Fatalf("upstream deployment.yaml: %v", err)
	}
	return &d
}

// Install applies upstream's RBAC, Service and APIService, and gives the
// Service the endpoint a running pod would: MetricsServerIP on the
// container's https port. The apiserver reaches it only with
// --enable-aggregator-routing (the lab has no kube-proxy for ClusterIPs).
func (ms *MetricsServer) Install(ctx context.Context, t testing.TB, cp *ControlPlane) {
	t.Helper()
	var manifests []string
	for _, f := range []string{"rbac.yaml", "service.yaml", "apiservice.yaml"} {
		data, err := os.ReadFile(filepath.Join(ms.dir, f))
		if err != nil {
			t.Fatal(err)
		}
		manifests = append(manifests, string(data))
	}
	cp.Apply(t, strings.Join(manifests, "\n---\n"))
	if err := AddAddress(MetricsServerIP); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-server-lab", Namespace: MetricsServerNamespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: "metrics-server",
			discoveryv1.LabelManagedBy:   "stackward-e2e",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{MetricsServerIP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](10250), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	_, err := cp.Admin.DiscoveryV1().EndpointSlices(MetricsServerNamespace).Create(ctx, slice, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("endpointslice for metrics-server: %v", err)
	}
}

// NodeUsage is one node's row of `kubectl top nodes`.
type NodeUsage struct {
	Name   string
	CPU    resource.Quantity
	Memory resource.Quantity
	Window string
	// Timestamp is when the kubelet took the latest sample.
	Timestamp time.Time
}

// NodeMetrics lists what `kubectl top nodes` shows: the metrics.k8s.io
// NodeMetrics through the apiserver's aggregator, by node name.
func (cp *ControlPlane) NodeMetrics(ctx context.Context) (map[string]NodeUsage, error) {
	body, err := cp.Admin.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/nodes").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("GET /apis/metrics.k8s.io/v1beta1/nodes: %w: %s", err, body)
	}
	var list struct {
		Items []struct {
			Metadata  metav1.ObjectMeta `json:"metadata"`
			Timestamp metav1.Time       `json:"timestamp"`
			Window    metav1.Duration   `json:"window"`
			Usage     struct {
				CPU    resource.Quantity `json:"cpu"`
				Memory resource.Quantity `json:"memory"`
			} `json:"usage"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decode NodeMetricsList: %w: %s", err, body)
	}
	out := map[string]NodeUsage{}
	for _, it := range list.Items {
		out[it.Metadata.Name] = NodeUsage{Name: it.Metadata.Name, CPU: it.Usage.CPU, Memory: it.Usage.Memory, Window: it.Window.Duration.String(), Timestamp: it.Timestamp.Time}
	}
	return out, nil
}
