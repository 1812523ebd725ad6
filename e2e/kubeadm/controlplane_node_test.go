//go:build e2e

// Package kubeadm tests the kubeadm topologies Stackward supports: the
// control-plane host as a node (kubeadm's default), the configurations in
// bootstrap/ for further control-plane hosts, and the kubelet-serving CA
// across them.
package kubeadm

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/approver"
)

func TestMain(m *testing.M) { framework.Main(m) }

// On kubeadm the control-plane host runs a kubelet whose node IP is the
// apiserver's advertise address. It must be initialized by the CCM like
// any node, keep kubeadm's control-plane label and taint, and get a
// serving certificate the approver verified against the cloud, so that
// `kubectl logs` reaches pods on it (Stackward's own pod runs there).
func TestControlPlaneHostIsANodeWithAVerifiedServingCertificate(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conf := cloud.CloudConf(t, "")
	// As an operator configures it: only the VIP that no node owns.
	opts := approver.Options{}
	opts.ControlPlaneEndpoints = []netip.Addr{netip.MustParseAddr(framework.ControlPlaneVIP)}
	cp.StartApprover(ctx, t, conf, opts)
	cp.StartCCM(ctx, t, conf)
	start := time.Now()
	node, srv := cp.StartControlPlaneNode(ctx, t, cloud)

	t.Run("the CCM initializes it and kubeadm's control-plane label and taint stay", func(t *testing.T) {
		n, err := cp.WaitForNode(ctx, framework.ControlPlaneNodeName, 90*time.Second, func(n *corev1.Node) bool {
			return !framework.HasTaint(n, "node.cloudprovider.kubernetes.io/uninitialized") && n.Labels["node.kubernetes.io/instance-type"] != ""
		})
		if err != nil {
			t.Fatalf("not initialized: %v", err)
		}
		if want := "openstack:///" + srv.ID; n.Spec.ProviderID != want {
			t.Errorf("providerID %q, want %q", n.Spec.ProviderID, want)
		}
		if _, ok := n.Labels[framework.ControlPlaneTaint]; !ok {
			t.Errorf("labels %v lack kubeadm's %s", n.Labels, framework.ControlPlaneTaint)
		}
		if !framework.HasTaint(n, framework.ControlPlaneTaint) {
			t.Errorf("taints %v lack kubeadm's %s", n.Spec.Taints, framework.ControlPlaneTaint)
		}
		var internal string
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				internal = a.Address
			}
		}
		if internal != framework.ControlPlaneIP {
			t.Errorf("InternalIP %q, want the apiserver's advertise address %s", internal, framework.ControlPlaneIP)
		}
	})

	t.Run("its serving certificate is approved for the apiserver's address and used", func(t *testing.T) {
		csr, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, framework.ControlPlaneNodeName, 90*time.Second, func(c *certificatesv1.CertificateSigningRequest) bool {
			return framework.Condition(c, certificatesv1.CertificateApproved) != nil || framework.Condition(c, certificatesv1.CertificateDenied) != nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if d := framework.Condition(csr, certificatesv1.CertificateDenied); d != nil {
			t.Fatalf("denied: %s %s", d.Reason, d.Message)
		}
		cert, err := node.WaitForServingCertificate(ctx, cp.ServingCACert, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(cert.IPAddresses) == 0 || cert.IPAddresses[0].String() != framework.ControlPlaneIP {
			t.Errorf("certificate IPs %v, want %s", cert.IPAddresses, framework.ControlPlaneIP)
		}
		t.Logf("control-plane host: kubelet start to verified serving certificate %v; hollow kubelet %s", time.Since(start).Round(time.Millisecond), peakRSS(node.Process.PID()))
	})

	t.Run("kubectl logs through the apiserver reaches a pod on it", func(t *testing.T) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "on-control-plane", Namespace: "default"},
			Spec: corev1.PodSpec{
				NodeName:    framework.ControlPlaneNodeName,
				Tolerations: []corev1.Toleration{{Key: framework.ControlPlaneTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				Containers:  []corev1.Container{{Name: "app", Image: "app"}},
			},
		}
		if err := cp.WaitDefaultServiceAccount(ctx, "default"); err != nil {
			t.Fatal(err)
		}
		if _, err := cp.Admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cp.Admin.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		})
		var lastErr error
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := cp.Admin.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil || p.Status.Phase != corev1.PodRunning {
				lastErr = err
				return false, nil
			}
			_, lastErr = cp.Admin.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{Container: "app"}).DoRaw(ctx)
			return lastErr == nil, nil
		})
		if err != nil {
			t.Fatalf("pod logs through the apiserver: %v (last: %v)", err, lastErr)
		}
	})
}

// peakRSS is a process's peak resident set (VmHWM), for the test log.
func peakRSS(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "peak RSS unknown: " + err.Error()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return "peak RSS " + strings.TrimSpace(v)
		}
	}
	return "peak RSS unknown"
}
