package loadbalancer

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/openstack"
)

// Which ports get a Service's security group. A node's status addresses
// are its own word (its kubelet credential may patch them), so an address
// alone never decides: a port gets the group only when it holds a member
// address and its device_id is the server named by the providerID of a
// node that lists that address. The CCM checks a providerID against the
// server's name when it initializes the node, and a providerID cannot be
// changed once set. A node listing another server's address (an operator
// VM's) gets that server's port nothing; a node without a providerID gets
// nothing until it has one.

// addressClaim is a node that lists a member address, and its server.
type addressClaim struct {
	node, server string
}

// memberClaims maps each member address of spec to the nodes listing it
// whose providerID names a server. Every node listing an address counts,
// not only the one the member was built from: two nodes listing the same
// address make one member, and the honest one's port must still qualify.
func memberClaims(ctx context.Context, spec Spec, nodes []*corev1.Node) map[string][]addressClaim {
	claims := map[string][]addressClaim{}
	for _, l := range spec.Listeners {
		for _, mb := range l.Pool.Members {
			claims[mb.Address] = nil
		}
	}
	logger := klog.FromContext(ctx)
	for _, n := range nodes {
		_, server, err := openstack.ParseProviderID(n.Spec.ProviderID)
		for _, a := range n.Status.Addresses {
			if _, member := claims[a.Address]; !member {
				continue
			}
			if err != nil {
				logger.V(2).Info("Not opening the Service's security group for a member address of a node without a valid providerID", "node", n.Name, "address", a.Address, "providerID", n.Spec.ProviderID, "err", err)
				continue
			}
			c := addressClaim{node: n.Name, server: server}
			if !slices.Contains(claims[a.Address], c) {
				claims[a.Address] = append(claims[a.Address], c)
			}
		}
	}
	return claims
}

// holdsMember says whether the port is a member node's own port: it holds
// a member address a node lists, on that node's server. A port holding a
// member address on another server is logged with the nodes that list it.
func holdsMember(ctx context.Context, p Port, claims map[string][]addressClaim) bool {
	var foreign []string
	for _, ip := range p.FixedIPs {
		cs, member := claims[ip.IPAddress]
		if !member {
			continue
		}
		if p.DeviceID != "" && slices.ContainsFunc(cs, func(c addressClaim) bool { return c.server == p.DeviceID }) {
			return true
		}
		for _, c := range cs {
			foreign = append(foreign, c.node+"="+ip.IPAddress)
		}
	}
	if len(foreign) > 0 {
		klog.FromContext(ctx).V(2).Info("Not opening the Service's security group on a port holding a node's listed address: the port is not on the node's server",
			"port", p.ID, "deviceID", p.DeviceID, "nodeAddresses", foreign)
	}
	return false
}
