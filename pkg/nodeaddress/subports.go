package nodeaddress

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/openstack"
)

// A server's second network may reach it as a VLAN on one of its NICs: a
// Neutron trunk whose parent port is the server's port carries subports,
// each a port of its own on another network. Nova lists none of their
// addresses (a subport's device_id is not the server), so, as the upstream
// CCM does, the fixed IPs of the subports of every trunk whose parent port
// is one of the server's ports are added to the server's addresses on the
// subport's network (by name), as fixed addresses: they become InternalIPs
// or ExternalIPs by the same [Networking] rules as Nova's.

// Subport is one port reaching a server through a trunk, resolved: the
// subport, its network, its trunk and the trunk's parent port.
type Subport struct {
	Port    openstack.Port
	Network openstack.NetworkInfo
	Trunk   openstack.Trunk
	Parent  openstack.Port
}

// Subports resolves the subports of the trunks on the server's ports in
// v: v.Ports are the ports whose device_id is the server, v.Trunks the
// trunks Neutron listed for them, v.Subports the subports as Neutron
// listed them by ID, v.Networks at least their networks. A subport the
// listing does not have (not visible to these credentials) is not the
// cluster's and is left out; a subport whose network is missing from the
// answer is an error: its addresses cannot be classified.
func Subports(v CloudView) ([]Subport, error) {
	if v.Server == nil || len(v.Trunks) == 0 {
		return nil, nil
	}
	parents := map[string]openstack.Port{}
	for _, p := range v.Ports {
		if p.DeviceID == v.Server.ID {
			parents[p.ID] = p
		}
	}
	ports := map[string]openstack.Port{}
	for _, p := range v.Subports {
		ports[p.ID] = p
	}
	networks := map[string]openstack.NetworkInfo{}
	for _, n := range v.Networks {
		networks[n.ID] = n
	}
	var out []Subport
	for _, t := range v.Trunks {
		parent, ok := parents[t.PortID]
		if !ok {
			continue
		}
		for _, sp := range t.SubPorts {
			p, ok := ports[sp.PortID]
			if !ok {
				continue
			}
			n, ok := networks[p.NetworkID]
			if !ok {
				return nil, fmt.Errorf("network %s of subport %s (trunk %s of server %s): not in Neutron's answer", p.NetworkID, p.ID, t.ID, v.Server.ID)
			}
			out = append(out, Subport{Port: p, Network: n, Trunk: t, Parent: parent})
		}
	}
	return out, nil
}

// ForView is For with the subports of the trunks in v: what the CCM
// publishes for v.Server.
func ForView(v CloudView, opts Options) ([]corev1.NodeAddress, error) {
	subports, err := Subports(v)
	if err != nil {
		return nil, err
	}
	return For(v.Server, subports, opts)
}
