package loadbalancer

import (
	"cmp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	servicehelper "k8s.io/cloud-provider/service/helpers"
)

// buildSpec is the desired Octavia tree of a Service. It makes no cloud
// call: the VIP network and subnet are already resolved into o.
func buildSpec(id Identity, svc *corev1.Service, o *options, nodes []*corev1.Node) Spec {
	ref := ServiceRef{Namespace: svc.Namespace, Name: svc.Name}
	name := LoadBalancerName(id.ClusterName, ref)
	spec := Spec{
		Name:         name,
		Description:  loadBalancerDescription(id, ref),
		Tags:         LoadBalancerTags(id, ref),
		VIPNetworkID: o.networkID,
		VIPSubnetID:  o.subnetID,
		VIPPortID:    o.portID,
		FlavorID:     o.flavorID,
		Zone:         o.zone,
		Provider:     o.provider,
		Owner:        ownerTag(id.ClusterName, ref),
	}
	spec.Tags = append(append(spec.Tags, spec.Owner), o.sharedWith...)
	if o.dualStack && o.additionalSubnetID != "" {
		spec.AdditionalVIPs = []VIP{{SubnetID: o.additionalSubnetID}}
	}
	if o.internal || o.floatingNetworkID == "" {
		// Without a floating IP, spec.loadBalancerIP is the VIP itself.
		spec.VIPAddress = o.loadBalancerIP
	}
	local := servicehelper.NeedsHealthCheck(svc)
	nodes = selectNodes(nodes, o.nodeSelector)
	for _, port := range svc.Spec.Ports {
		protocol := string(port.Protocol)
		l := ListenerSpec{
			Name:         listenerName(name, protocol, int(port.Port)),
			Protocol:     protocol,
			Port:         int(port.Port),
			AllowedCIDRs: listenerCIDRs(o),
			ConnLimit:    o.connLimit,
			Timeouts:     o.timeouts,
			Tags:         []string{spec.Owner},
			Pool: PoolSpec{
				Name:     poolName(name, protocol, int(port.Port)),
				Protocol: protocol,
				Method:   o.method,
				Members:  members(o, nodes, int(port.NodePort)),
			},
		}
		l.Pool.Persistence = persistence(svc, o)
		if o.proxyProtocol != "" {
			l.Pool.Protocol = o.proxyProtocol
		}
		if o.monitor {
			m := &MonitorSpec{
				Name:           monitorName(name, protocol, int(port.Port)),
				Type:           monitorType(port.Protocol),
				Delay:          o.monitorDelay,
				Timeout:        o.monitorTimeout,
				MaxRetries:     o.monitorRetries,
				MaxRetriesDown: o.monitorDown,
			}
			if local && !isOVN(o.provider) {
				// kube-proxy answers 200 on the health check node port
				// only on nodes with a ready endpoint. The OVN provider
				// has no HTTP monitors and no monitor port: its TCP
				// monitor on the NodePort fails on nodes without a ready
				// endpoint too, where kube-proxy drops the traffic of an
				// externalTrafficPolicy Local Service.
				m.Type, m.URLPath = "HTTP", "/healthz"
				for i := range l.Pool.Members {
					l.Pool.Members[i].MonitorPort = int(svc.Spec.HealthCheckNodePort)
				}
			}
			l.Pool.Monitor = m
		}
		applyL7(&l, o)
		spec.Listeners = append(spec.Listeners, l)
	}
	return spec
}

func monitorType(p corev1.Protocol) string {
	switch p {
	case corev1.ProtocolUDP:
		return "UDP-CONNECT"
	case corev1.ProtocolSCTP:
		return "SCTP"
	}
	return "TCP"
}

// members are the nodes' InternalIPs on the NodePort, sorted so that specs
// compare stably: of the Service's primary IP family, and of the other one
// too for a dual-stack load balancer (Octavia's pools take members of
// both families once the load balancer has a VIP of each). The
// member-subnet-id names a subnet of the primary family, so only those
// members carry it.
func members(o *options, nodes []*corev1.Node, nodePort int) []Member {
	var out []Member
	for _, n := range nodes {
		if addr := memberAddress(o, n, o.ipv6); addr != "" {
			out = append(out, Member{Name: n.Name, Address: addr, Port: nodePort, SubnetID: o.memberSubnetID})
		}
		if !o.dualStack {
			continue
		}
		if addr := memberAddress(&options{memberAddressType: o.memberAddressType}, n, !o.ipv6); addr != "" {
			out = append(out, Member{Name: n.Name, Address: addr, Port: nodePort})
		}
	}
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.Address, b.Address) })
	return slices.CompactFunc(out, func(a, b Member) bool { return a.Address == b.Address })
}

func internalIP(n *corev1.Node, v6 bool) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && strings.Contains(a.Address, ":") == v6 {
			return a.Address
		}
	}
	return ""
}
