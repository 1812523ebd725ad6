//go:build e2e

package soak

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/stackward/stackward/e2e/framework"
)

// nodeOf is the soak node an unconverged entry ("node NAME (why)") names.
func (s *soak) nodeOf(entry string) *node {
	rest, ok := strings.CutPrefix(entry, "node ")
	if !ok {
		return nil
	}
	name, _, _ := strings.Cut(rest, " ")
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nodes[name]
}

func (s *soak) kubeletOf(n *node) *framework.Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return n.kubelet
}

// diagnoseNode says why a Node is not converged: its Ready and
// NetworkUnavailable conditions with their heartbeat ages, its Lease's
// renewal age, its taints, whether its kubelet still runs, and the kubelet's
// log lines about node status, the lease and certificates.
func (s *soak) diagnoseNode(ctx context.Context, n *node) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var b strings.Builder
	k, err := s.cp.Admin.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		fmt.Fprintf(&b, "Node: %v", err)
	} else {
		fmt.Fprintf(&b, "Node uid %s created %s ago, providerID %q, podCIDR %q", k.UID, age(k.CreationTimestamp.Time), k.Spec.ProviderID, k.Spec.PodCIDR)
		for _, c := range k.Status.Conditions {
			if c.Type == corev1.NodeReady || c.Type == corev1.NodeNetworkUnavailable {
				fmt.Fprintf(&b, "; %s=%s reason %q message %q heartbeat %s ago, transition %s ago",
					c.Type, c.Status, c.Reason, c.Message, age(c.LastHeartbeatTime.Time), age(c.LastTransitionTime.Time))
			}
		}
		var taints []string
		for _, t := range k.Spec.Taints {
			taints = append(taints, fmt.Sprintf("%s:%s", t.Key, t.Effect))
		}
		fmt.Fprintf(&b, "; taints %v", taints)
	}
	if l, err := s.cp.Admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.name, metav1.GetOptions{}); err != nil {
		fmt.Fprintf(&b, "; Lease: %v", err)
	} else {
		renew, owner := "never", ""
		if l.Spec.RenewTime != nil {
			renew = age(l.Spec.RenewTime.Time) + " ago"
		}
		for _, o := range l.OwnerReferences {
			owner += fmt.Sprintf("%s/%s uid %s ", o.Kind, o.Name, o.UID)
		}
		fmt.Fprintf(&b, "; Lease renewed %s, created %s ago, owner %s", renew, age(l.CreationTimestamp.Time), strings.TrimSpace(owner))
	}
	kl := s.kubeletOf(n)
	if kl == nil {
		b.WriteString("; no kubelet")
		return b.String()
	}
	done, exitErr := kl.Process.Exited()
	fmt.Fprintf(&b, "; kubelet launched %.0fs into the soak, exited %v %v", n.since.Sub(s.led.start).Seconds(), done, exitErr)
	if lines := kubeletComplaints(kl.Process.LogPath, 12); len(lines) > 0 {
		fmt.Fprintf(&b, "; kubelet log:\n    %s", strings.Join(lines, "\n    "))
	}
	return b.String()
}

// complaint matches kubelet log lines about posting node status, the node
// lease, certificates and the apiserver refusing or timing out.
var complaint = regexp.MustCompile(`(?i)node status|nodelease|lease|certificate|x509|unauthorized|forbidden|timeout|deadline exceeded|not ready|notready|error updating|unable to|failed to`)

// kubeletComplaints are the last max matching lines of the log at path.
func kubeletComplaints(path string, max int) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if complaint.MatchString(line) {
			if len(line) > 400 {
				line = line[:400] + "…"
			}
			out = append(out, line)
		}
	}
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// diagnoseService says why a Service has no address: its load balancer's
// state in Octavia and the Service's last Events.
func (s *soak) diagnoseService(ctx context.Context, name string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var b strings.Builder
	pages, err := loadbalancers.List(s.api.octavia, loadbalancers.ListOpts{Name: "kube_service_lab_soak_" + name}).AllPages(ctx)
	if err != nil {
		fmt.Fprintf(&b, "Octavia: %v", err)
	} else {
		lbs, _ := loadbalancers.ExtractLoadBalancers(pages)
		fmt.Fprintf(&b, "%d load balancers", len(lbs))
		for _, lb := range lbs {
			if lb.ID != s.other.lbID {
				fmt.Fprintf(&b, "; %s %s/%s updated %s", lb.ID, lb.ProvisioningStatus, lb.OperatingStatus, lb.UpdatedAt.Format(time.RFC3339))
			}
		}
	}
	evs, err := s.cp.Admin.CoreV1().Events("soak").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		fmt.Fprintf(&b, "; Events: %v", err)
		return b.String()
	}
	items := evs.Items
	if len(items) > 6 {
		items = items[len(items)-6:]
	}
	for _, e := range items {
		fmt.Fprintf(&b, "; event %s %s x%d (last %s ago): %s", e.Type, e.Reason, e.Count, age(e.LastTimestamp.Time), e.Message)
	}
	return b.String()
}

func age(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return time.Since(t).Round(time.Second).String()
}

// readySummary is the Node's Ready condition in brief: status, reason and
// how long it has been so.
func readySummary(k *corev1.Node) string {
	for _, c := range k.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return fmt.Sprintf("%s %s for %s", c.Status, c.Reason, age(c.LastTransitionTime.Time))
		}
	}
	return "no Ready condition"
}

// watchReadyLoss counts Nodes that lose Ready while their kubelet runs (a
// node the soak took down is not counted): the node lifecycle controller
// marking a live kubelet's Node Unknown is a heartbeat that came too late,
// expected around the apiserver restart and under CPU starvation, not as a
// steady beat (which is what a Lease renewed less often than the
// node-monitor grace period gives).
func (s *soak) watchReadyLoss(factory informers.SharedInformerFactory) {
	_, _ = factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj any) {
		was, ok1 := oldObj.(*corev1.Node)
		now, ok2 := newObj.(*corev1.Node)
		if !ok1 || !ok2 || !framework.IsReady(was) || framework.IsReady(now) {
			return
		}
		s.mu.Lock()
		n := s.nodes[now.Name]
		running := n != nil && n.up && n.kubelet != nil
		s.mu.Unlock()
		if running {
			s.led.count("Ready lost by a Node whose kubelet runs")
		}
	}})
}
