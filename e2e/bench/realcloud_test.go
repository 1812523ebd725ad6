//go:build e2e && bench

package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

// realCloudNodes is how many nodes the CCM initializes on each cloud.
const realCloudNodes = 50

// TestBenchRealCloud sets the real OpenStack services (Debian's Zed, brought
// up here in the lab and stopped at the end) beside cloudsim, with the same
// CCM and apiserver: the CCM initializing 50 nodes (cloud calls per node
// and time), and a Service of type LoadBalancer from create to ACTIVE with
// each Octavia provider (time and calls). The report gives each figure on
// both clouds and the real/cloudsim ratio; nothing is asserted about them.
func TestBenchRealCloud(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	rc := framework.StartRealCloud(t)
	sim := framework.StartSimCloud(t, framework.SimCloudOptions{})
	figures := map[string]map[string]float64{}
	for _, cloud := range []framework.TestCloud{sim.TestCloud(), rc} {
		if !t.Run(cloud.Name(), func(t *testing.T) { figures[cloud.Name()] = benchCloud(t, cp, cloud) }) {
			t.FailNow()
		}
	}
	ratios := map[string]float64{}
	for k, real := range figures["openstack"] {
		if s := figures["cloudsim"][k]; s > 0 {
			ratios[k] = real / s
		}
	}
	put(t, "real_cloud_vs_cloudsim", map[string]any{
		"nodes":                      realCloudNodes,
		"real_cloud_startup_seconds": rc.StartupTime.Seconds(),
		"cloudsim":                   figures["cloudsim"],
		"openstack":                  figures["openstack"],
		"openstack_over_cloudsim":    ratios,
	})
}

// benchCloud runs the node and Service measurements on one cloud.
func benchCloud(t *testing.T, cp *framework.ControlPlane, cloud framework.TestCloud) map[string]float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	prefix := cloud.Name() + "-bench-"
	for i := 1; i <= realCloudNodes; i++ {
		cloud.CreateServer(t, fmt.Sprintf("%s%04d", prefix, i), i, "m1.small", "az-1")
	}
	registerNodes(ctx, t, cp.Admin, prefix, realCloudNodes)
	t.Cleanup(func() {
		_ = cp.Admin.CoreV1().Nodes().DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	// One CCM for both providers: a class per provider.
	conf := cloud.CloudConf(t, "\n[LoadBalancerClass \"amphora\"]\nlb-provider = amphora\n\n[LoadBalancerClass \"ovn\"]\nlb-provider = ovn\n")
	reg := prometheus.NewRegistry()
	start := time.Now()
	stop, err := cp.RunCCMWithRegistry(ctx, conf, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 15*time.Minute, true, func(ctx context.Context) (bool, error) {
		return countInitialized(ctx, cp.Admin, prefix) == realCloudNodes, nil
	})
	if err != nil {
		t.Fatalf("%d of %d nodes initialized: %v", countInitialized(ctx, cp.Admin, prefix), realCloudNodes, err)
	}
	out := map[string]float64{"initialize_50_nodes_seconds": time.Since(start).Seconds()}
	calls := cloudCalls(t, reg)
	out["initialize_cloud_calls_per_node"] = PerUnit(calls["compute"]+calls["network"], realCloudNodes)
	out["initialize_compute_calls_per_node"] = PerUnit(calls["compute"], realCloudNodes)
	out["initialize_network_calls_per_node"] = PerUnit(calls["network"], realCloudNodes)

	for _, provider := range []string{"amphora", "ovn"} {
		before := cloudCalls(t, reg)
		active, deleted := serviceRoundTrip(ctx, t, cp, cloud.Name()+"-"+provider, provider)
		after := cloudCalls(t, reg)
		out["service_"+provider+"_create_to_active_seconds"] = active.Seconds()
		out["service_"+provider+"_delete_seconds"] = deleted.Seconds()
		out["service_"+provider+"_octavia_calls"] = float64(after["loadbalancer"] - before["loadbalancer"])
		out["service_"+provider+"_network_calls"] = float64(after["network"] - before["network"])
	}
	return out
}

// serviceRoundTrip creates a Service of type LoadBalancer of the class
// provider in namespace ns, and returns how long it took to get its ingress
// (the load balancer ACTIVE with every node a member) and, after deleting
// it, for the Service to be gone (the load balancer deleted).
func serviceRoundTrip(ctx context.Context, t *testing.T, cp *framework.ControlPlane, ns, provider string) (active, deleted time.Duration) {
	t.Helper()
	if _, err := cp.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Annotations: map[string]string{
			"service.beta.kubernetes.io/openstack-internal-load-balancer": "true",
			"loadbalancer.openstack.org/class":                            provider,
		}},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	start := time.Now()
	if _, err := cp.Admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := cp.Admin.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(s.Status.LoadBalancer.Ingress) > 0, nil
	})
	if err != nil {
		t.Fatalf("%s Service got no ingress: %v; events: %s", provider, err, serviceEvents(ctx, cp, ns))
	}
	active = time.Since(start)
	start = time.Now()
	if err := cp.Admin.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The service controller's finalizer holds the Service until its load
	// balancer is deleted.
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Admin.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("%s Service not deleted: %v; events: %s", provider, err, serviceEvents(ctx, cp, ns))
	}
	return active, time.Since(start)
}

func serviceEvents(ctx context.Context, cp *framework.ControlPlane, ns string) string {
	list, err := cp.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Message))
	}
	return strings.Join(out, "; ")
}

// cloudCalls counts the CCM's cloud requests (each attempt) by service,
// from the stackward_cloud_request_duration_seconds histogram on reg.
func cloudCalls(t *testing.T, reg *prometheus.Registry) map[string]int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range families {
		if f.GetName() != "stackward_cloud_request_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "service" {
					out[l.GetValue()] += int(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return out
}
