package loadbalancer

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func labelled(ns []*corev1.Node, labels ...map[string]string) []*corev1.Node {
	for i, l := range labels {
		ns[i].Labels = l
	}
	return ns
}

func memberAddresses(l *fakeLB) []string {
	var out []string
	for _, p := range l.tree.Pools {
		for _, m := range p.Members {
			out = append(out, m.Address)
		}
	}
	return out
}

func TestNodeSelectorKeepsOnlyMatchingNodesAsMembers(t *testing.T) {
	ns := labelled(nodes("10.0.0.1", "10.0.0.2", "10.0.0.3"),
		map[string]string{"pool": "ingress", "edge": ""},
		map[string]string{"pool": "ingress"},
		map[string]string{"pool": "batch", "edge": "yes"})
	for _, tc := range []struct {
		name, annotation, config string
		want                     string
	}{
		{"no selector: every node", "", "", "10.0.0.1,10.0.0.2,10.0.0.3"},
		{"key=value", "pool=ingress", "", "10.0.0.1,10.0.0.2"},
		{"key=value and a bare key", "pool=ingress, edge", "", "10.0.0.1"},
		{"the config's selector is the default", "", "edge", "10.0.0.1,10.0.0.3"},
		{"the annotation wins over the config", "pool=batch", "pool=ingress", "10.0.0.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oct, net := newFakeOctavia(), newFakeNeutron()
			m := newManager(oct, net)
			m.Config.NodeSelector = tc.config
			svc := service(func(s *corev1.Service) {
				if tc.annotation != "" {
					s.Annotations[AnnotationNodeSelector] = tc.annotation
				}
			})
			converge(t, m, oct, svc, ns)
			if got := strings.Join(memberAddresses(oct.only()), ","); got != tc.want {
				t.Errorf("members %s, want %s", got, tc.want)
			}
		})
	}
}

func TestAChangedNodeSelectorIsOneBatchMemberUpdate(t *testing.T) {
	ns := labelled(nodes("10.0.0.1", "10.0.0.2"), map[string]string{"pool": "ingress"}, nil)
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	converge(t, m, oct, service(), ns)
	oct.resetCalls()
	svc := service(func(s *corev1.Service) { s.Annotations[AnnotationNodeSelector] = "pool=ingress" })
	converge(t, m, oct, svc, ns)
	if w := strings.Join(oct.writes(), ","); w != "batch_update_members" {
		t.Errorf("writes %s, want one batch member update", w)
	}
	if got := strings.Join(memberAddresses(oct.only()), ","); got != "10.0.0.1" {
		t.Errorf("members %s", got)
	}
}

func TestAnInvalidNodeSelectorIsAnEventAndNoCall(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	svc := service(func(s *corev1.Service) { s.Annotations[AnnotationNodeSelector] = "pool=in gress" })
	_, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
	if err == nil || !strings.Contains(err.Error(), AnnotationNodeSelector) || !strings.Contains(err.Error(), `"pool=in gress"`) {
		t.Errorf("Ensure: %v, want an error naming the annotation and the value", err)
	}
	if len(oct.calls)+len(net.calls) != 0 {
		t.Errorf("cloud calls %v %v", oct.calls, net.calls)
	}
}
