//go:build e2e

package kubeadm

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/approver"
)

// An HA control plane as kubeadm builds it: three hosts, each with an etcd
// member, an apiserver and a leader-electing kube-controller-manager, the
// second and third joined with bootstrap/'s control-plane join
// configuration, all behind a VIP that is the controlPlaneEndpoint. Every
// host's kubelet is a node whose serving certificate the approver
// verifies, with approver.controlPlaneEndpoints set to the VIP as an
// operator sets it; the chart installs with --wait on the three; and when
// one host goes away (its etcd member, apiserver, controller manager and
// kubelet) the approver and the CCM, talking through the VIP, keep
// working: a new worker joins, is approved and is initialized.
// It replaces the package's shared control plane, so it runs last.
func TestThreeControlPlaneHostsBehindAVIPSurviveLosingOne(t *testing.T) {
	cp := framework.ReplaceSharedControlPlane(t, framework.ControlPlaneOptions{HA: true})
	t.Logf("HA lab: %d control-plane hosts (etcd, kube-apiserver, kube-controller-manager each) ready behind the VIP in %v; their RSS %d MiB",
		len(cp.Hosts()), cp.StartupTime.Round(time.Millisecond), cp.RSS()>>20)
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conf := cloud.CloudConf(t, "")
	opts := approver.Options{}
	opts.ControlPlaneEndpoints = []netip.Addr{netip.MustParseAddr(framework.ControlPlaneVIP)}
	cp.StartApprover(ctx, t, conf, opts)
	cp.StartCCM(ctx, t, conf)

	t.Run("etcd has three voting members, one on each host", func(t *testing.T) {
		var want []string
		for _, h := range cp.Hosts() {
			want = append(want, h.Name)
		}
		for _, h := range cp.Hosts() {
			members, err := cp.EtcdMembers(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, m := range members {
				names = append(names, m.Name)
				if m.IsLearner {
					t.Errorf("member %s is still a learner", m.Name)
				}
			}
			slices.Sort(names)
			if !slices.Equal(names, want) {
				t.Errorf("the member on %s lists %v, want %v", h.Name, names, want)
			}
		}
	})

	start := time.Now()
	var nodes []*framework.Node
	n, _ := cp.StartControlPlaneNode(ctx, t, cloud)
	nodes = append(nodes, n)
	for i := 1; i < framework.HAHosts; i++ {
		n, _ := cp.StartExtraControlPlaneNode(ctx, t, cloud, i)
		nodes = append(nodes, n)
	}

	t.Run("every host's kubelet is initialized and certified for its own address", func(t *testing.T) {
		for i, node := range nodes {
			if _, err := cp.WaitForNode(ctx, node.Name, 90*time.Second, func(n *corev1.Node) bool {
				return !framework.HasTaint(n, "node.cloudprovider.kubernetes.io/uninitialized") && framework.HasTaint(n, framework.ControlPlaneTaint)
			}); err != nil {
				t.Errorf("not initialized with kubeadm's taint: %v", err)
			}
			csr, err := cp.WaitForCSR(ctx, certificatesv1.KubeletServingSignerName, node.Name, 90*time.Second, func(c *certificatesv1.CertificateSigningRequest) bool {
				return framework.Condition(c, certificatesv1.CertificateApproved) != nil || framework.Condition(c, certificatesv1.CertificateDenied) != nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if d := framework.Condition(csr, certificatesv1.CertificateDenied); d != nil {
				t.Fatalf("%s denied: %s %s", node.Name, d.Reason, d.Message)
			}
			cert, err := node.WaitForServingCertificate(ctx, cp.ServingCACert, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if len(cert.IPAddresses) != 1 || cert.IPAddresses[0].String() != framework.HostIP(i) {
				t.Errorf("%s's certificate IPs %v, want its host address %s", node.Name, cert.IPAddresses, framework.HostIP(i))
			}
		}
		var rss int64
		for _, n := range nodes {
			rss += framework.ProcessRSS(n.Process.PID())
		}
		t.Logf("three control-plane kubelets certified in %v; RSS of the HA lab with its kubelets %d MiB", time.Since(start).Round(time.Millisecond), (cp.RSS()+rss)>>20)
	})

	t.Run("helm install --wait places one pod on each host", func(t *testing.T) {
		bindCtx, stopBinding := context.WithCancel(ctx)
		defer stopBinding()
		go cp.BindPendingPods(bindCtx, "kube-system", "app.kubernetes.io/name=stackward")
		installWithWait(ctx, t, cp, cloud, "helm4", "ha-wait", framework.HAHosts)
	})

	// The host whose kube-controller-manager leads goes: the others must
	// take over signing (kubelet client and serving certificates).
	const kcmLease = "kube-controller-manager"
	lost := -1
	for i, h := range cp.Hosts() {
		if h.Acquired(kcmLease) {
			lost = i
		}
	}
	if lost < 0 {
		t.Fatal("no host's kube-controller-manager says it acquired its lease")
	}
	lostHost := cp.Hosts()[lost]
	nodes[lost].Stop()
	if err := cp.StopHost(lostHost.Name); err != nil {
		t.Fatal(err)
	}
	t.Logf("control-plane host %s (%s), whose kube-controller-manager led, powered off: its etcd member, apiserver, controller manager and kubelet", lostHost.Name, lostHost.IP)

	t.Run("with one host gone a new worker joins, is approved and initialized", func(t *testing.T) {
		start := time.Now()
		cp.CheckNodeJoins(ctx, t, cloud, "after-loss", 70)
		t.Logf("a worker joined through the remaining two hosts in %v", time.Since(start).Round(time.Millisecond))
	})

	t.Run("each remaining apiserver reaches the remaining hosts' kubelets with the imported serving CA", func(t *testing.T) {
		var remaining []string
		for i, h := range cp.Hosts() {
			if h != lostHost {
				remaining = append(remaining, nodes[i].Name)
			}
		}
		// Through the VIP first: logs and exec, as kubectl does.
		cp.StartLogProber(ctx, t, remaining).Stop()
		// Then each apiserver itself, the joined ones verifying with the
		// CA that pki import gave them.
		for _, h := range cp.Hosts() {
			if h == lostHost {
				continue
			}
			client, err := cp.HostAdmin(h)
			if err != nil {
				t.Fatal(err)
			}
			for _, node := range remaining {
				pod := framework.LogProbePodPrefix + node
				if _, err := client.CoreV1().Pods("default").GetLogs(pod, &corev1.PodLogOptions{Container: "app"}).DoRaw(ctx); err != nil {
					t.Errorf("the apiserver of %s: logs of pod %s on %s: %v", h.Name, pod, node, err)
				}
			}
		}
	})

	t.Run("the remaining etcd members still list all three", func(t *testing.T) {
		for _, h := range cp.Hosts() {
			if h == lostHost {
				continue
			}
			members, err := cp.EtcdMembers(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			if len(members) != framework.HAHosts {
				t.Errorf("the member on %s lists %d members, want %d", h.Name, len(members), framework.HAHosts)
			}
		}
	})

	t.Run("a remaining host's kube-controller-manager took the lead", func(t *testing.T) {
		var took []string
		for _, h := range cp.Hosts() {
			if h != lostHost && h.Acquired(kcmLease) {
				took = append(took, h.Name)
			}
		}
		if len(took) == 0 {
			t.Errorf("no remaining host's kube-controller-manager acquired the lease after %s went", lostHost.Name)
		}
		lease, err := cp.Admin.CoordinationV1().Leases("kube-system").Get(ctx, kcmLease, metav1.GetOptions{})
		if err != nil || lease.Spec.RenewTime == nil || time.Since(lease.Spec.RenewTime.Time) > 30*time.Second {
			t.Errorf("kube-controller-manager's lease is not being renewed: %v %+v", err, lease)
		}
	})
}
