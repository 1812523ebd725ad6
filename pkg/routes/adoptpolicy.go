package routes

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stackward/stackward/pkg/openstack"
)

// The upstream openstack-cloud-controller-manager keeps no record of its
// routes: a route of its is a bare "pod CIDR via node address" on the
// router (no name, no tag; Neutron routes have neither), and the allowed
// address pair of the pod CIDR on the node's port. Taking over, Stackward
// adopts such a route into its ledger when it is beyond doubt that node's:
//   - its destination is exactly one Node's pod CIDR, and no other Node
//     claims it;
//   - that Node is initialized by the CCM (its providerID is trusted), its
//     pod CIDR passes the pod CIDR policy (podcidr.go), and the next hop is
//     one of its InternalIPs;
//   - a port of the Node's server (found by its providerID, in Neutron)
//     holds the next hop: the cloud, not the kubelet, says the address is
//     the node's (Adopt checks that);
//   - no other route to the same destination is the node's already or a
//     candidate too.
// A route matching no Node's pod CIDR is another cluster's or the
// operator's and is never touched. Adoptable decides all but the cloud's
// ports; the CCM (pkg/provider) reports each verdict as an Event.

// Adoptable checks everything but the cloud's ports for a route the ledger
// does not name (one of others), whose destination is the pod CIDR of
// cands (NodesWithPodCIDR); why is "" when the route may be adopted for
// node, whose server is serverID.
func Adoptable(rt Route, cands []*corev1.Node, nodes []corev1.Node, owned []Owned, others []Route, cidrs PodCIDRPolicy) (node *corev1.Node, serverID, why string) {
	if len(cands) > 1 {
		names := make([]string, len(cands))
		for i, c := range cands {
			names[i] = c.Name
		}
		return nil, "", fmt.Sprintf("its destination is the pod CIDR of several Nodes (%s)", strings.Join(names, ", "))
	}
	node = cands[0]
	if !Initialized(node) {
		return nil, "", fmt.Sprintf("node %s is not initialized by the CCM yet", node.Name)
	}
	_, serverID, err := openstack.ParseProviderID(node.Spec.ProviderID)
	if err != nil {
		return nil, "", fmt.Sprintf("node %s: %v", node.Name, err)
	}
	if refusal := cidrs.Refuse(node.Name, rt.Destination, nodes); refusal != "" {
		return nil, "", refusal
	}
	if !hasInternalIP(node, rt.NextHop) {
		return nil, "", fmt.Sprintf("next hop %s is not an InternalIP of node %s", rt.NextHop, node.Name)
	}
	for _, o := range owned {
		if o.Destination == rt.Destination {
			return nil, "", fmt.Sprintf("this cluster already routes %s via %s", o.Destination, o.NextHop)
		}
	}
	for _, other := range others {
		if other != rt && other.Destination == rt.Destination && hasInternalIP(node, other.NextHop) {
			return nil, "", fmt.Sprintf("the router also routes %s via %s, another address of node %s", other.Destination, other.NextHop, node.Name)
		}
	}
	return node, serverID, ""
}

// NodesWithPodCIDR are the Nodes whose pod CIDRs include cidr exactly.
func NodesWithPodCIDR(nodes []corev1.Node, cidr string) []*corev1.Node {
	want, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil
	}
	var out []*corev1.Node
	for i := range nodes {
		for _, c := range podCIDRsOf(&nodes[i]) {
			if p, err := netip.ParsePrefix(c); err == nil && p == want {
				out = append(out, &nodes[i])
				break
			}
		}
	}
	return out
}

// OwnedBy reports whether node is still the record's: its (CCM-checked)
// providerID names the record's server and it still has the next hop.
//
// Who a route belongs to is never read from Node.status.addresses alone,
// which each kubelet writes: a node that adds another node's IP to its own
// status changes nothing about the other node's route.
func (rec Record) OwnedBy(node *corev1.Node) bool {
	if !Initialized(node) {
		return false
	}
	if _, id, err := openstack.ParseProviderID(node.Spec.ProviderID); err != nil || id != rec.ServerID {
		return false
	}
	return hasInternalIP(node, rec.NextHop)
}

// Initialized reports whether the CCM has initialized node, so that its
// providerID is trusted: the kubelet may write any providerID, and only
// once the CCM has checked the node's name against the server's (and
// removed the uninitialized taint) does it name the node's server.
func Initialized(node *corev1.Node) bool {
	if node.Spec.ProviderID == "" {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.Key == cloudproviderapi.TaintExternalCloudProvider {
			return false
		}
	}
	return true
}

func hasInternalIP(node *corev1.Node, ip string) bool {
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && a.Address == ip {
			return true
		}
	}
	return false
}
