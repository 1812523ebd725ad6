package loadbalancer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func (n *fakeNeutron) SubnetCIDR(_ context.Context, subnetID string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, "get_subnet")
	if c, ok := n.cidrs[subnetID]; ok {
		return c, nil
	}
	if strings.Contains(subnetID, "unreadable") {
		return "", errors.New("neutron: 503 Service Unavailable")
	}
	return "198.51.100.0/24", nil // a subnet no test node has an address on
}

// multiNIC is a node with a NIC on the nodes' network (10.0.0.0/24),
// listed first, and one on a storage network (10.1.0.0/24), and a
// provider-network address as its ExternalIP.
func multiNIC(name, nodesIP, storageIP, external string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: nodesIP},
		{Type: corev1.NodeInternalIP, Address: storageIP},
	}
	if external != "" {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: external})
	}
	return n
}

func TestMemberAddressOnMultiNICNodes(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		nodes       []*corev1.Node
		want        []string // member addresses
		wantSubnet  string
		wantErr     string
	}{
		{
			name:  "without member-subnet-id members are the nodes' first InternalIPs, as before",
			nodes: []*corev1.Node{multiNIC("a", "10.0.0.1", "10.1.0.1", ""), multiNIC("b", "10.0.0.2", "10.1.0.2", "")},
			want:  []string{"10.0.0.1", "10.0.0.2"},
		},
		{
			name:        "member-subnet-id makes each member the node's address on that subnet, not its first",
			annotations: map[string]string{AnnotationMemberSubnetID: "subnet-storage"},
			nodes:       []*corev1.Node{multiNIC("a", "10.0.0.1", "10.1.0.1", ""), multiNIC("b", "10.0.0.2", "10.1.0.2", "")},
			want:        []string{"10.1.0.1", "10.1.0.2"},
			wantSubnet:  "subnet-storage",
		},
		{
			name:        "a node without an address on the member subnet keeps its first address",
			annotations: map[string]string{AnnotationMemberSubnetID: "subnet-storage"},
			nodes:       []*corev1.Node{multiNIC("a", "10.0.0.1", "10.1.0.1", ""), multiNIC("b", "10.0.0.2", "10.2.0.2", "")},
			want:        []string{"10.0.0.2", "10.1.0.1"},
			wantSubnet:  "subnet-storage",
		},
		{
			name:        "member-address-type ExternalIP makes the members the nodes' ExternalIPs",
			annotations: map[string]string{AnnotationMemberAddressType: "ExternalIP"},
			nodes:       []*corev1.Node{multiNIC("a", "10.0.0.1", "10.1.0.1", "192.0.2.11"), multiNIC("b", "10.0.0.2", "10.1.0.2", "192.0.2.12")},
			want:        []string{"192.0.2.11", "192.0.2.12"},
		},
		{
			name:        "an unknown member-address-type is refused before any cloud call",
			annotations: map[string]string{AnnotationMemberAddressType: "Hostname"},
			nodes:       []*corev1.Node{multiNIC("a", "10.0.0.1", "10.1.0.1", "")},
			wantErr:     `annotation loadbalancer.openstack.org/member-address-type="Hostname": must be InternalIP or ExternalIP`,
		},
		{
			name:        "a member subnet Neutron cannot read is an error, never a guess",
			annotations: map[string]string{AnnotationMemberSubnetID: "subnet-unreadable"},
			nodes:       []*corev1.Node{multiNIC("a", "10.0.0.1", "10.1.0.1", "")},
			wantErr:     "read member subnet subnet-unreadable",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oct, net := newFakeOctavia(), newFakeNeutron()
			net.cidrs = map[string]string{"subnet-nodes": "10.0.0.0/24", "subnet-storage": "10.1.0.0/24"}
			m := newManager(oct, net)
			svc := service(func(s *corev1.Service) {
				for k, v := range tc.annotations {
					s.Annotations[k] = v
				}
			})
			if tc.wantErr != "" {
				_, err := m.Ensure(context.Background(), "lab", svc, tc.nodes)
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Ensure: %v, want %q", err, tc.wantErr)
				}
				if oct.only() != nil {
					t.Error("a load balancer was created")
				}
				return
			}
			converge(t, m, oct, svc, tc.nodes)
			l := oct.only()
			if l == nil {
				t.Fatal("no load balancer")
			}
			var got []string
			for _, p := range l.tree.Pools {
				for _, mb := range p.Members {
					got = append(got, mb.Address)
					if mb.SubnetID != tc.wantSubnet {
						t.Errorf("member %s on subnet %q, want %q", mb.Address, mb.SubnetID, tc.wantSubnet)
					}
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("members %v, want %v", got, tc.want)
			}
		})
	}
}
