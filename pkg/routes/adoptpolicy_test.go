package routes

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

func policyNode(name, server, podCIDR, ip string, taints ...corev1.Taint) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.NodeSpec{PodCIDRs: []string{podCIDR}, Taints: taints}}
	if server != "" {
		n.Spec.ProviderID = "openstack:///" + server
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	return n
}

var uninitializedTaint = corev1.Taint{Key: cloudproviderapi.TaintExternalCloudProvider, Effect: corev1.TaintEffectNoSchedule}

// TestAdoptable: an unrecorded route is adopted only for the one
// initialized Node whose pod CIDR it is, through that Node's InternalIP.
func TestAdoptable(t *testing.T) {
	rt := Route{Destination: "10.244.1.0/24", NextHop: "10.0.0.5"}
	tests := []struct {
		name   string
		nodes  []corev1.Node
		owned  []Owned
		others []Route
		why    string // "" adopted for node a on server srv-a
	}{
		{"the route of an initialized node's pod CIDR via its InternalIP is adopted",
			[]corev1.Node{policyNode("a", "srv-a", "10.244.1.0/24", "10.0.0.5")}, nil, nil, ""},
		{"two nodes claiming the pod CIDR refuse it", []corev1.Node{policyNode("a", "srv-a", "10.244.1.0/24", "10.0.0.5"),
			policyNode("b", "srv-b", "10.244.1.0/24", "10.0.0.6")}, nil, nil, "several Nodes (a, b)"},
		{"a node the CCM has not initialized is refused",
			[]corev1.Node{policyNode("a", "srv-a", "10.244.1.0/24", "10.0.0.5", uninitializedTaint)}, nil, nil, "not initialized by the CCM"},
		{"a next hop that is not the node's InternalIP is refused",
			[]corev1.Node{policyNode("a", "srv-a", "10.244.1.0/24", "10.0.0.9")}, nil, nil, "next hop 10.0.0.5 is not an InternalIP of node a"},
		{"a pod CIDR this cluster already routes is refused", []corev1.Node{policyNode("a", "srv-a", "10.244.1.0/24", "10.0.0.5")},
			[]Owned{{Record: Record{Route: Route{Destination: "10.244.1.0/24", NextHop: "10.0.0.7"}}}}, nil, "already routes 10.244.1.0/24 via 10.0.0.7"},
		{"a pod CIDR wider than a node's share is refused",
			[]corev1.Node{policyNode("a", "srv-a", "10.244.0.0/16", "10.0.0.5")}, nil, nil, "wider than a node's /24"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rt
			if tt.nodes[0].Spec.PodCIDRs[0] != rt.Destination {
				r.Destination = tt.nodes[0].Spec.PodCIDRs[0]
			}
			cands := NodesWithPodCIDR(tt.nodes, r.Destination)
			node, server, why := Adoptable(r, cands, tt.nodes, tt.owned, append(tt.others, r), PodCIDRPolicy{})
			if tt.why == "" {
				if why != "" || node == nil || node.Name != "a" || server != "srv-a" {
					t.Errorf("node %v, server %q, refusal %q; want adopted for a on srv-a", node, server, why)
				}
				return
			}
			if node != nil || !strings.Contains(why, tt.why) {
				t.Errorf("node %v, refusal %q; want refused saying %q", node, why, tt.why)
			}
		})
	}
}

// TestRecordOwnedBy: a route stays a Node's while its trusted providerID
// names the record's server and it still has the next hop.
func TestRecordOwnedBy(t *testing.T) {
	rec := Record{Route: Route{Destination: "10.244.1.0/24", NextHop: "10.0.0.5"}, ServerID: "srv-a", Node: "a"}
	tests := []struct {
		name string
		node corev1.Node
		want bool
	}{
		{"the record's server and next hop own it", policyNode("a", "srv-a", "10.244.1.0/24", "10.0.0.5"), true},
		{"another server with the same address does not", policyNode("a", "srv-b", "10.244.1.0/24", "10.0.0.5"), false},
		{"the server without the address does not", policyNode("a", "srv-a", "10.244.1.0/24", "10.0.0.6"), false},
		{"an uninitialized node does not", policyNode("a", "srv-a", "10.244.1.0/24", "10.0.0.5", uninitializedTaint), false},
		{"a node without a providerID does not", policyNode("a", "", "10.244.1.0/24", "10.0.0.5"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rec.OwnedBy(&tt.node); got != tt.want {
				t.Errorf("OwnedBy = %v, want %v", got, tt.want)
			}
		})
	}
}
