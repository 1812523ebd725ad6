package provider

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stackward/stackward/pkg/openstack"
	"github.com/stackward/stackward/pkg/routes"
)

// portsDown is a router whose port listing fails, as a cloud error would.
type portsDown struct{ *routerFake }

func (portsDown) ListPorts(context.Context, string) ([]routes.Port, error) {
	return nil, errors.New("neutron: 503 Service Unavailable")
}

func adoptNode(name, ip, server, podCIDR string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "openstack:///" + server, PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
}

func TestRouteAdoption(t *testing.T) {
	upstreamA := routes.Route{Destination: "198.19.130.0/24", NextHop: "10.0.0.5"}
	upstreamB := routes.Route{Destination: "198.19.131.0/24", NextHop: "10.0.0.6"}
	operators := routes.Route{Destination: "198.19.200.0/24", NextHop: "10.0.0.99"}
	tests := []struct {
		name string
		// router and nodes before the first reconcile
		routes  []routes.Route
		nodes   func() []corev1.Node
		adopt   bool
		failing bool
		// wantErr: ListRoutes fails (cloud error)
		wantErr bool
		// adopted routes, in the ledger afterwards
		wantAdopted []routes.Route
		// listed: "destination target" of ListRoutes
		wantListed []string
		// events: substrings, one per expected Event
		wantEvents []string
	}{
		{
			name:   "upstream's route of each node is adopted with the port that holds its next hop, and listed as that node's",
			routes: []routes.Route{upstreamA, upstreamB},
			nodes: func() []corev1.Node {
				return []corev1.Node{adoptNode("a", "10.0.0.5", "srv-a", "198.19.130.0/24"), adoptNode("b", "10.0.0.6", "srv-b", "198.19.131.0/24")}
			},
			adopt:       true,
			wantAdopted: []routes.Route{upstreamA, upstreamB},
			wantListed:  []string{"198.19.130.0/24 a", "198.19.131.0/24 b"},
			wantEvents:  []string{"Normal AdoptedUpstreamRoute Route 198.19.130.0/24 via 10.0.0.5", "Normal AdoptedUpstreamRoute Route 198.19.131.0/24 via 10.0.0.6"},
		},
		{
			name:   "an operator's route that is no node's pod CIDR is neither adopted nor listed, and no Event is made",
			routes: []routes.Route{operators},
			nodes: func() []corev1.Node {
				return []corev1.Node{adoptNode("a", "10.0.0.5", "srv-a", "198.19.130.0/24")}
			},
			adopt: true,
		},
		{
			name:   "a route of a node's pod CIDR via another node's address is not adopted, and the Warning names it",
			routes: []routes.Route{{Destination: "198.19.130.0/24", NextHop: "10.0.0.6"}},
			nodes: func() []corev1.Node {
				return []corev1.Node{adoptNode("a", "10.0.0.5", "srv-a", "198.19.130.0/24"), adoptNode("b", "10.0.0.6", "srv-b", "198.19.131.0/24")}
			},
			adopt:      true,
			wantEvents: []string{"Warning RouteNotAdopted Route 198.19.130.0/24 via 10.0.0.6 on router router-1 is not adopted (left as it is): next hop 10.0.0.6 is not an InternalIP of node a"},
		},
		{
			name:   "a next hop the node lists but no port of its server holds is not adopted: the cloud decides",
			routes: []routes.Route{{Destination: "198.19.130.0/24", NextHop: "10.0.0.6"}},
			nodes: func() []corev1.Node {
				n := adoptNode("a", "10.0.0.5", "srv-a", "198.19.130.0/24")
				n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.6"})
				return []corev1.Node{n}
			},
			adopt:      true,
			wantEvents: []string{"Warning RouteNotAdopted Route 198.19.130.0/24 via 10.0.0.6 on router router-1 is not adopted (left as it is): no port of server srv-a holds 10.0.0.6"},
		},
		{
			name:   "a route of a pod CIDR two nodes claim is ambiguous: not adopted, and both nodes are told",
			routes: []routes.Route{upstreamA},
			nodes: func() []corev1.Node {
				return []corev1.Node{adoptNode("a", "10.0.0.5", "srv-a", "198.19.130.0/24"), adoptNode("b", "10.0.0.6", "srv-b", "198.19.130.0/24")}
			},
			adopt: true,
			wantEvents: []string{"Warning RouteNotAdopted Route 198.19.130.0/24 via 10.0.0.5 on router router-1 is not adopted (left as it is): its destination is the pod CIDR of several Nodes (a, b)",
				"Warning RouteNotAdopted Route 198.19.130.0/24 via 10.0.0.5 on router router-1 is not adopted (left as it is): its destination is the pod CIDR of several Nodes (a, b)"},
		},
		{
			name:   "a node the CCM has not initialized has no route adopted, whatever providerID its kubelet wrote",
			routes: []routes.Route{upstreamA},
			nodes: func() []corev1.Node {
				n := adoptNode("a", "10.0.0.5", "srv-a", "198.19.130.0/24")
				n.Spec.Taints = []corev1.Taint{{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: corev1.TaintEffectNoSchedule}}
				return []corev1.Node{n}
			},
			adopt:      true,
			wantEvents: []string{"Warning RouteNotAdopted Route 198.19.130.0/24 via 10.0.0.5 on router router-1 is not adopted (left as it is): node a is not initialized by the CCM yet"},
		},
		{
			name:   "with adopt-upstream-routes false nothing is adopted or listed",
			routes: []routes.Route{upstreamA, operators},
			nodes: func() []corev1.Node {
				return []corev1.Node{adoptNode("a", "10.0.0.5", "srv-a", "198.19.130.0/24")}
			},
		},
		{
			name:   "a cloud error while checking the ports fails the listing and adopts nothing",
			routes: []routes.Route{upstreamA},
			nodes: func() []corev1.Node {
				return []corev1.Node{adoptNode("a", "10.0.0.5", "srv-a", "198.19.130.0/24")}
			},
			adopt:   true,
			failing: true,
			wantErr: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			fake := &routerFake{routes: slices.Clone(tc.routes), ports: map[string]*routes.Port{
				"p5": {ID: "p5", DeviceID: "srv-a", MACAddress: "m5", FixedIPs: []openstack.FixedIP{{IPAddress: "10.0.0.5"}}},
				"p6": {ID: "p6", DeviceID: "srv-b", MACAddress: "m6", FixedIPs: []openstack.FixedIP{{IPAddress: "10.0.0.6"}}},
			}}
			var net routes.Neutron = fake
			if tc.failing {
				net = portsDown{fake}
			}
			kube := kubefake.NewClientset()
			ledger := &routes.ConfigMapLedger{Client: func() (kubernetes.Interface, error) { return kube, nil }, Namespace: "kube-system", Name: routes.DefaultLedgerName}
			r, err := routes.NewWithNeutron(ctx, net, ledger, "router-1")
			if err != nil {
				t.Fatal(err)
			}
			nodes := tc.nodes()
			events := record.NewFakeRecorder(20)
			nr := &nodeRoutes{r: r, nodes: func(context.Context) ([]corev1.Node, error) { return nodes, nil },
				events: func() record.EventRecorder { return events }, adoptUpstream: tc.adopt, memo: &adoptMemo{}}
			// Two reconciles: verdicts are said once.
			var listed []*cloudprovider.Route
			for range 2 {
				listed, err = nr.ListRoutes(ctx, "lab")
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("ListRoutes: %v, want error %v", err, tc.wantErr)
			}
			recs, err := ledger.List(ctx, "router-1")
			if err != nil {
				t.Fatal(err)
			}
			var adopted []routes.Route
			for _, rec := range recs {
				adopted = append(adopted, rec.Route)
				want := map[string]string{"10.0.0.5": "p5", "10.0.0.6": "p6"}[rec.NextHop]
				if rec.PortID != want {
					t.Errorf("route %v recorded with port %s, want %s", rec.Route, rec.PortID, want)
				}
			}
			if !slices.Equal(adopted, tc.wantAdopted) {
				t.Errorf("adopted %v, want %v", adopted, tc.wantAdopted)
			}
			var got []string
			for _, l := range listed {
				got = append(got, l.DestinationCIDR+" "+string(l.TargetNode))
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.wantListed) {
				t.Errorf("listed %v, want %v", got, tc.wantListed)
			}
			if !slices.Equal(fake.routes, tc.routes) || len(fake.ports["p5"].AllowedAddressPairs)+len(fake.ports["p6"].AllowedAddressPairs) != 0 {
				t.Errorf("the cloud changed: routes %v, pairs %v %v", fake.routes, fake.ports["p5"].AllowedAddressPairs, fake.ports["p6"].AllowedAddressPairs)
			}
			close(events.Events)
			var evs []string
			for e := range events.Events {
				evs = append(evs, e)
			}
			slices.Sort(evs)
			if len(evs) != len(tc.wantEvents) {
				t.Fatalf("events %q, want %q", evs, tc.wantEvents)
			}
			for i, want := range tc.wantEvents {
				if !strings.HasPrefix(evs[i], want) {
					t.Errorf("event %q, want %q", evs[i], want)
				}
			}
		})
	}
}

func TestAdoptedRouteLifecycle(t *testing.T) {
	ctx := context.Background()
	upstreamA := routes.Route{Destination: "198.19.130.0/24", NextHop: "10.0.0.5"}
	upstreamB := routes.Route{Destination: "198.19.131.0/24", NextHop: "10.0.0.6"}
	operators := routes.Route{Destination: "198.19.200.0/24", NextHop: "10.0.0.99"}
	fake := &routerFake{routes: []routes.Route{upstreamA, upstreamB, operators}, ports: map[string]*routes.Port{
		// As upstream leaves them: the pod CIDR allowed on the node's port
		// (Neutron filled in the port's MAC), beside an operator's VRRP pair.
		"p5": {ID: "p5", DeviceID: "srv-a", MACAddress: "m5", FixedIPs: []openstack.FixedIP{{IPAddress: "10.0.0.5"}},
			AllowedAddressPairs: []routes.Pair{{IPAddress: "10.0.0.200", MACAddress: "vrrp"}, {IPAddress: "198.19.130.0/24", MACAddress: "m5"}}},
		"p6": {ID: "p6", DeviceID: "srv-b", MACAddress: "m6", FixedIPs: []openstack.FixedIP{{IPAddress: "10.0.0.6"}},
			AllowedAddressPairs: []routes.Pair{{IPAddress: "198.19.131.0/24", MACAddress: "m6"}}},
	}}
	kube := kubefake.NewClientset()
	ledger := &routes.ConfigMapLedger{Client: func() (kubernetes.Interface, error) { return kube, nil }, Namespace: "kube-system", Name: routes.DefaultLedgerName}
	r, err := routes.NewWithNeutron(ctx, fake, ledger, "router-1")
	if err != nil {
		t.Fatal(err)
	}
	nodes := []corev1.Node{adoptNode("a", "10.0.0.5", "srv-a", "198.19.130.0/24"), adoptNode("b", "10.0.0.6", "srv-b", "198.19.131.0/24")}
	nr := &nodeRoutes{r: r, nodes: func(context.Context) ([]corev1.Node, error) { return nodes, nil }, adoptUpstream: true, memo: &adoptMemo{}}
	if _, err := nr.ListRoutes(ctx, "lab"); err != nil {
		t.Fatal(err)
	}

	t.Run("a removed node's adopted route and upstream's address pair go, the operator's route and pair stay", func(t *testing.T) {
		nodes = nodes[1:]
		listed, err := nr.ListRoutes(ctx, "lab")
		if err != nil {
			t.Fatal(err)
		}
		var orphan *cloudprovider.Route
		for _, l := range listed {
			if l.TargetNode == "" {
				orphan = l
			}
		}
		if orphan == nil || orphan.DestinationCIDR != upstreamA.Destination {
			t.Fatalf("listed %+v, want %v without a target", listed, upstreamA)
		}
		if err := nr.DeleteRoute(ctx, "lab", orphan); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fake.routes, []routes.Route{upstreamB, operators}) {
			t.Errorf("routes %v", fake.routes)
		}
		if !slices.Equal(fake.ports["p5"].AllowedAddressPairs, []routes.Pair{{IPAddress: "10.0.0.200", MACAddress: "vrrp"}}) {
			t.Errorf("pairs of the removed node's port %v", fake.ports["p5"].AllowedAddressPairs)
		}
	})
	t.Run("deleting the operator's route is refused: it is not this cluster's", func(t *testing.T) {
		err := nr.DeleteRoute(ctx, "lab", &cloudprovider.Route{DestinationCIDR: operators.Destination,
			TargetNodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: operators.NextHop}}})
		if !errors.Is(err, routes.ErrNotOwned) || !slices.Contains(fake.routes, operators) {
			t.Errorf("err %v routes %v", err, fake.routes)
		}
	})
}

func TestCreateRouteWithAdoptionOff(t *testing.T) {
	ctx := context.Background()
	upstreamA := routes.Route{Destination: "198.19.130.0/24", NextHop: "10.0.0.5"}
	fake := &routerFake{routes: []routes.Route{upstreamA}, ports: map[string]*routes.Port{
		"p5": {ID: "p5", DeviceID: "srv-a", MACAddress: "m5", FixedIPs: []openstack.FixedIP{{IPAddress: "10.0.0.5"}}},
	}}
	kube := kubefake.NewClientset()
	ledger := &routes.ConfigMapLedger{Client: func() (kubernetes.Interface, error) { return kube, nil }, Namespace: "kube-system", Name: routes.DefaultLedgerName}
	r, err := routes.NewWithNeutron(ctx, fake, ledger, "router-1")
	if err != nil {
		t.Fatal(err)
	}
	nodes := []corev1.Node{adoptNode("a", "10.0.0.5", "srv-a", "198.19.130.0/24")}
	events := record.NewFakeRecorder(5)
	nr := &nodeRoutes{r: r, nodes: func(context.Context) ([]corev1.Node, error) { return nodes, nil },
		events: func() record.EventRecorder { return events }, memo: &adoptMemo{}}
	err = nr.CreateRoute(ctx, "lab", "", &cloudprovider.Route{TargetNode: "a", DestinationCIDR: upstreamA.Destination,
		TargetNodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}}})
	if err == nil || !strings.Contains(err.Error(), "adopt-upstream-routes is false") {
		t.Errorf("CreateRoute over upstream's route: %v", err)
	}
	if recs, _ := ledger.List(ctx, "router-1"); len(recs) != 0 || len(fake.ports["p5"].AllowedAddressPairs) != 0 {
		t.Errorf("recorded %v, pairs %v: the route was taken", recs, fake.ports["p5"].AllowedAddressPairs)
	}
	if len(events.Events) != 1 || !strings.HasPrefix(<-events.Events, "Warning RouteNotAdopted") {
		t.Error("no RouteNotAdopted Warning on the node")
	}
}
