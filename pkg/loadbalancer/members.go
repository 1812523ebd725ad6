package loadbalancer

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/config"
)

// AnnotationNodeSelector restricts the members to the nodes whose labels
// match (upstream syntax: comma-separated key=value or key); its default is
// [LoadBalancer] node-selector.
const AnnotationNodeSelector = "loadbalancer.openstack.org/node-selector"

// nodeSelector reads the Service's node selector, or the config's when the
// Service has none. An empty annotation selects every node, as upstream.
func (p *annotationParser) nodeSelector(def string) map[string]string {
	v, ok := p.a[AnnotationNodeSelector]
	if !ok {
		sel, err := config.ParseNodeSelector(def)
		if err != nil { // Validate refused it already; be safe
			p.fail("node-selector in [LoadBalancer]", def, err.Error())
		}
		return sel
	}
	sel, err := config.ParseNodeSelector(v)
	if err != nil {
		p.fail(AnnotationNodeSelector, v, err.Error())
	}
	return sel
}

// selectNodes keeps the nodes matching sel (every node when it is empty).
func selectNodes(nodes []*corev1.Node, sel map[string]string) []*corev1.Node {
	if len(sel) == 0 {
		return nodes
	}
	var out []*corev1.Node
	for _, n := range nodes {
		if config.MatchesNodeSelector(sel, n.Labels) {
			out = append(out, n)
		}
	}
	return out
}
