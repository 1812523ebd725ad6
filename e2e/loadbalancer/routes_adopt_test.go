//go:build e2e

package loadbalancer

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/routes"
)

// TestUpstreamRoutesAreAdopted: the routes the upstream CCM left on the
// router (a pod CIDR via the node's address, the pod CIDR allowed on the
// node's port, no name or tag: Neutron routes have none) are made by hand
// as upstream makes them, then Stackward starts with routes on.
func TestUpstreamRoutesAreAdopted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Routes off at first: the nodes join and get pod CIDRs (from
	// kube-controller-manager's IPAM) while no CCM writes routes.
	l := newLab(ctx, t, framework.SimCloudOptions{}, "[Route]\nrouter-id = %s\n", nil, "rta", 230, 3)
	cp, api := l.cp, l.api
	routerID := api.routerID(ctx, t)
	podCIDRs := map[string]string{}
	for name := range l.nodes {
		n, err := cp.WaitForNode(ctx, name, 60*time.Second, func(n *corev1.Node) bool { return n.Spec.PodCIDR != "" })
		if err != nil {
			t.Fatalf("node %s got no pod CIDR: %v", name, err)
		}
		podCIDRs[name] = n.Spec.PodCIDR
	}
	l.stop()

	port := func(ip string) ports.Port {
		pages, err := ports.List(api.neutron, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: ip}}}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := ports.ExtractPorts(pages)
		if err != nil || len(ps) != 1 {
			t.Fatalf("port of %s: %v %v", ip, ps, err)
		}
		return ps[0]
	}
	pairs := func(ip string) []string {
		var out []string
		for _, p := range port(ip).AllowedAddressPairs {
			out = append(out, p.IPAddress)
		}
		return out
	}
	// As upstream: each node's route, and its pod CIDR as an address pair
	// without a MAC (Neutron fills in the port's).
	var made []routers.Route
	for name, cidr := range podCIDRs {
		made = append(made, routers.Route{DestinationCIDR: cidr, NextHop: l.ips[name]})
		p := port(l.ips[name])
		newPairs := append(p.AllowedAddressPairs, ports.AddressPair{IPAddress: cidr})
		if _, err := ports.Update(ctx, api.neutron, p.ID, ports.UpdateOpts{AllowedAddressPairs: &newPairs}).Extract(); err != nil {
			t.Fatal(err)
		}
	}
	// An operator's route inside the cluster CIDR, and one of rta-1's pod
	// CIDR via an address no node has (not upstream's shape).
	operators := routers.Route{DestinationCIDR: "198.19.250.0/24", NextHop: framework.NodeIP(239)}
	misdirected := routers.Route{DestinationCIDR: podCIDRs["rta-1"], NextHop: framework.NodeIP(238)}
	made = append(made, operators, misdirected)
	if _, err := extraroutes.Add(ctx, api.neutron, routerID, extraroutes.Opts{Routes: &made}).Extract(); err != nil {
		t.Fatal(err)
	}
	before := api.routes(ctx, t, routerID)
	pairsBefore := map[string][]string{}
	for name, ip := range l.ips {
		pairsBefore[name] = pairs(ip)
	}

	l.stop = startCCM(ctx, t, cp, l.conf, "--allocate-node-cidrs", "--configure-cloud-routes", "--cluster-cidr=198.19.128.0/17", "--route-reconciliation-period=2s")

	ledger := func() []routes.Record {
		cm, err := cp.Admin.CoreV1().ConfigMaps("kube-system").Get(ctx, routes.DefaultLedgerName, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		var out []routes.Record
		for _, v := range cm.Data {
			var rec routes.Record
			if json.Unmarshal([]byte(v), &rec) == nil && rec.Router == routerID {
				out = append(out, rec)
			}
		}
		return out
	}
	events := func(reason string) []corev1.Event {
		evs, err := cp.Admin.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
		if err != nil {
			t.Fatal(err)
		}
		var out []corev1.Event
		for _, e := range evs.Items {
			if _, ours := l.ips[e.InvolvedObject.Name]; ours {
				out = append(out, e)
			}
		}
		return out
	}

	t.Run("every node's upstream route joins the ledger, and the router keeps exactly its routes", func(t *testing.T) {
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			return len(ledger()) == len(podCIDRs), nil
		})
		if err != nil {
			t.Fatalf("ledger %+v, want a record per node of %v", ledger(), podCIDRs)
		}
		for _, rec := range ledger() {
			if podCIDRs[rec.Node] != rec.Destination || l.ips[rec.Node] != rec.NextHop || rec.PortID != port(rec.NextHop).ID {
				t.Errorf("record %+v, want node's pod CIDR via its address on its port", rec)
			}
		}
		// Several reconcile periods (2 s): nothing added, nothing removed.
		deadline := time.Now().Add(8 * time.Second)
		for time.Now().Before(deadline) {
			if now := api.routes(ctx, t, routerID); !sameRoutes(now, before) {
				t.Fatalf("routes changed to %v (were %v)", now, before)
			}
			time.Sleep(500 * time.Millisecond)
		}
		for name, ip := range l.ips {
			if got := pairs(ip); !slices.Equal(got, pairsBefore[name]) {
				t.Errorf("address pairs of %s changed from %v to %v", name, pairsBefore[name], got)
			}
		}
		if evs := events("AdoptedUpstreamRoute"); len(evs) != len(podCIDRs) {
			t.Errorf("%d AdoptedUpstreamRoute Events, want one per node: %+v", len(evs), evs)
		}
	})

	t.Run("the route of a node's pod CIDR via an address no node has is not adopted, and a Warning on the node names it", func(t *testing.T) {
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return len(events("RouteNotAdopted")) > 0, nil
		})
		if err != nil {
			t.Fatal("no RouteNotAdopted Event")
		}
		evs := events("RouteNotAdopted")
		if len(evs) != 1 || evs[0].InvolvedObject.Name != "rta-1" || evs[0].Type != corev1.EventTypeWarning {
			t.Fatalf("events %+v", evs)
		}
		t.Logf("event: %s", evs[0].Message)
	})

	t.Run("a removed node's adopted route and address pair go; the operator's and the misdirected routes stay", func(t *testing.T) {
		gone, ip := "rta-2", l.ips["rta-2"]
		l.removeNode(ctx, t, gone)
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			for _, r := range api.routes(ctx, t, routerID) {
				if r.DestinationCIDR == podCIDRs[gone] && r.NextHop == ip {
					return false, nil
				}
			}
			return !slices.Contains(pairs(ip), podCIDRs[gone]), nil
		})
		if err != nil {
			t.Fatalf("route %s via %s still there: %v, pairs %v", podCIDRs[gone], ip, api.routes(ctx, t, routerID), pairs(ip))
		}
		want := slices.DeleteFunc(slices.Clone(before), func(r routers.Route) bool { return r.DestinationCIDR == podCIDRs[gone] && r.NextHop == ip })
		if now := api.routes(ctx, t, routerID); !sameRoutes(now, want) {
			t.Errorf("routes %v, want %v", now, want)
		}
		if n := len(ledger()); n != 2 {
			t.Errorf("%d records, want 2", n)
		}
	})
}

func sameRoutes(a, b []routers.Route) bool {
	key := func(rs []routers.Route) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = r.DestinationCIDR + " via " + r.NextHop
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}
