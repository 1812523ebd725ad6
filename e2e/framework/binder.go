package framework

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// BindPendingPods plays the lab's kube-scheduler (it runs none) for the
// pods of namespace ns matching selector, until ctx ends: a DaemonSet's pod
// goes to the node its controller named; any other pod to a node whose
// labels match its nodeSelector, whose NoSchedule/NoExecute taints it
// tolerates, and where no hostNetwork pod already holds one of its ports
// (the scheduler's NodePorts rule, which is what leaves a second
// hostNetwork replica Pending on a single node). A pod that fits nowhere
// stays Pending, as it would.
func (cp *ControlPlane) BindPendingPods(ctx context.Context, ns, selector string) {
	_ = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := cp.Admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		nodes, err := cp.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for i := range pods.Items {
			pod := &pods.Items[i]
			if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
				continue
			}
			node := daemonSetNode(pod)
			if node == "" {
				for j := range nodes.Items {
					if fits(pod, &nodes.Items[j], pods.Items) {
						node = nodes.Items[j].Name
						break
					}
				}
			}
			if node == "" {
				continue
			}
			b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
			if err := cp.Admin.CoreV1().Pods(ns).Bind(ctx, b, metav1.CreateOptions{}); err == nil {
				pod.Spec.NodeName = node // later pods see its ports
			}
		}
		return false, nil
	})
}

// daemonSetNode is the node the DaemonSet controller pinned the pod to.
func daemonSetNode(pod *corev1.Pod) string {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

func fits(pod *corev1.Pod, node *corev1.Node, all []corev1.Pod) bool {
	if !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	for i := range node.Spec.Taints {
		taint := &node.Spec.Taints[i]
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		tolerated := false
		for j := range pod.Spec.Tolerations {
			tolerated = tolerated || pod.Spec.Tolerations[j].ToleratesTaint(klog.Background(), taint, false)
		}
		if !tolerated {
			return false
		}
	}
	if !pod.Spec.HostNetwork {
		return true
	}
	ports := map[int32]bool{}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			ports[p.ContainerPort] = true
		}
	}
	for _, other := range all {
		if other.Spec.NodeName != node.Name || !other.Spec.HostNetwork || other.Name == pod.Name {
			continue
		}
		for _, c := range other.Spec.Containers {
			for _, p := range c.Ports {
				if ports[p.ContainerPort] {
					return false
				}
			}
		}
	}
	return true
}
