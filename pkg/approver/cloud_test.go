package approver

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/internal/openstacktest"
	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/openstack"
)

// newFakeCompute is Nova as openstack.Compute sees it, for testing the real
// lookup (openstack.ServerForNode) behind NewOpenStackCloud: its listings
// include DELETED servers, which the lookup must leave out itself. A
// non-nil err fails every call.
func newFakeCompute(servers []openstack.Server, err error) *openstacktest.Compute {
	c := openstacktest.NewCompute(servers...)
	c.ListDeleted = true
	c.SetErr(err)
	return c
}

// novaCalls counts c's calls as the approver's batching sees them: a GET
// or a listing by one name is a targeted lookup (gets); a listing of
// several servers (no name, or openstack.NamesRegexp's "^(...)") is a
// listing.
func novaCalls(c *openstacktest.Compute) (gets, lists int) {
	for _, call := range c.Calls() {
		if !call.Get && (call.Opts.Name == "" || strings.HasPrefix(call.Opts.Name, "^(")) {
			lists++
		} else {
			gets++
		}
	}
	return gets, lists
}

// fakeOwnership is Neutron for the servers (derivedView), counting its
// requests: targeted (ports of a server, floating IPs of ports) and
// listings of the project.
type fakeOwnership struct {
	servers []openstack.Server
	err     error
	// overrides replace derivedView for a server (by ID), as fakeCloud's.
	overrides map[string]nodeaddress.CloudView
	// trunkErr fails the trunk listings only.
	trunkErr error

	mu                 sync.Mutex
	targeted, listings int
}

func (f *fakeOwnership) count(listing bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if listing {
		f.listings++
	} else {
		f.targeted++
	}
	return f.err
}

func (f *fakeOwnership) calls() (targeted, listings int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.targeted, f.listings
}

var _ openstack.Ownership = (*fakeOwnership)(nil)

func (f *fakeOwnership) views() []nodeaddress.CloudView {
	var out []nodeaddress.CloudView
	for i := range f.servers {
		if f.servers[i].Status == openstack.StatusDeleted {
			continue
		}
		if v, ok := f.overrides[f.servers[i].ID]; ok {
			out = append(out, v)
			continue
		}
		out = append(out, derivedView(&f.servers[i]))
	}
	return out
}

func (f *fakeOwnership) ServerPorts(_ context.Context, serverID, projectID string) ([]openstack.Port, error) {
	if err := f.count(false); err != nil {
		return nil, err
	}
	var out []openstack.Port
	for _, v := range f.views() {
		for _, p := range v.Ports {
			if p.DeviceID == serverID && p.ProjectID == projectID {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

func (f *fakeOwnership) FloatingIPsOfPorts(_ context.Context, portIDs []string) ([]openstack.FloatingIP, error) {
	if err := f.count(false); err != nil {
		return nil, err
	}
	var out []openstack.FloatingIP
	for _, v := range f.views() {
		for _, fip := range v.FloatingIPs {
			if slices.Contains(portIDs, fip.PortID) {
				out = append(out, fip)
			}
		}
	}
	return out, nil
}

func (f *fakeOwnership) Networks(_ context.Context, ids []string) ([]openstack.NetworkInfo, error) {
	var out []openstack.NetworkInfo
	for _, v := range f.views() {
		for _, n := range v.Networks {
			if i := slices.Index(ids, n.ID); i >= 0 {
				out = append(out, n)
				ids = slices.Delete(ids, i, i+1)
			}
		}
	}
	return out, nil
}

func (f *fakeOwnership) PortsOfServers(_ context.Context, serverIDs []string, projectID string) ([]openstack.Port, error) {
	if err := f.count(true); err != nil {
		return nil, err
	}
	var out []openstack.Port
	for _, v := range f.views() {
		for _, p := range v.Ports {
			if p.ProjectID == projectID && slices.Contains(serverIDs, p.DeviceID) {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

func TestOpenStackCloudLookups(t *testing.T) {
	servers := testCloud().servers
	tests := []struct {
		name    string
		nodes   []*corev1.Node
		spec    csrSpec
		region  string
		err     error
		verdict Verdict
		reason  string
		// noDecision: the lookup errs and nothing is decided.
		noDecision bool
	}{
		{name: "found by provider ID", nodes: []*corev1.Node{node("node-a", "openstack:///id-a")}, spec: csrSpec{node: "node-a", ips: []string{"10.0.0.10"}}, verdict: Approve, reason: ReasonVerified},
		{name: "found by provider ID with the configured region", region: "RegionOne", nodes: []*corev1.Node{node("node-a", "openstack://RegionOne/id-a")}, spec: csrSpec{node: "node-a", ips: []string{"10.0.0.10"}}, verdict: Approve, reason: ReasonVerified},
		{name: "found by exact name before the CCM set the Node's provider ID", spec: csrSpec{node: "node-b", ips: []string{"198.18.0.11"}}, verdict: Approve, reason: ReasonVerified},
		{name: "provider ID of another cloud is denied", nodes: []*corev1.Node{node("node-a", "aws:///us-east-1a/i-0123")}, spec: csrSpec{node: "node-a", ips: []string{"10.0.0.10"}}, verdict: Deny, reason: ReasonInvalidProviderID},
		{name: "provider ID of another region is no decision: this cloud.conf cannot tell", region: "RegionOne", nodes: []*corev1.Node{node("node-a", "openstack://RegionTwo/id-a")}, spec: csrSpec{node: "node-a", ips: []string{"10.0.0.10"}}, noDecision: true},
		{name: "a name that is a prefix of a server's is not found", spec: csrSpec{node: "node", ips: []string{"10.0.0.10"}}, verdict: Deny, reason: ReasonInstanceNotFound},
		{name: "a name as a regular expression finds nothing", spec: csrSpec{node: "node-.", ips: []string{"10.0.0.10"}}, verdict: Deny, reason: ReasonInstanceNotFound},
		{name: "two servers of the node's name leave it pending", spec: csrSpec{node: "twin", ips: []string{"10.0.0.14"}}, verdict: Wait, reason: ReasonInstanceAmbiguous},
		{name: "a deleted server is not found by provider ID", nodes: []*corev1.Node{node("node-dead", "openstack:///id-dead")}, spec: csrSpec{node: "node-dead", ips: []string{"10.0.0.13"}}, verdict: Deny, reason: ReasonInstanceNotFound},
		{name: "a Nova error is no decision", err: errors.New("nova: 500"), spec: csrSpec{node: "node-a", ips: []string{"10.0.0.10"}}},
		{name: "a floating IP on the server's port is approved", spec: csrSpec{node: "node-b", ips: []string{"10.0.0.11", "198.18.0.11"}}, verdict: Approve, reason: ReasonVerified},
		{name: "an accessIPv4 is not trusted", spec: csrSpec{node: "node-acc", ips: []string{"10.0.0.20", "203.0.113.20"}}, verdict: Deny, reason: ReasonUntrustedAddress},
		{name: "a fixed IP on a port of another project is not trusted", spec: csrSpec{node: "node-xport", ips: []string{"10.0.0.23"}}, verdict: Deny, reason: ReasonUntrustedAddress},
		{name: "a fixed IP on another project's network is not trusted", spec: csrSpec{node: "node-xnet", ips: []string{"10.0.0.24"}}, verdict: Deny, reason: ReasonUntrustedAddress},
		{name: "an address no port of the server carries is not trusted", spec: csrSpec{node: "node-noport", ips: []string{"10.0.0.25"}}, verdict: Deny, reason: ReasonUntrustedAddress},
	}
	// Each case is decided alone (a targeted lookup) and within a batch
	// (answered by one listing of the project): the answers must agree.
	for _, mode := range []string{"alone", "in a batch"} {
		for _, tt := range tests {
			if mode != "alone" && tt.noDecision {
				continue // decided before any lookup: nothing to batch
			}
			t.Run(mode+": "+tt.name, func(t *testing.T) {
				c := newFakeCompute(servers, tt.err)
				o := &fakeOwnership{servers: servers, overrides: testCloud().views}
				e := NewEvaluator(NewOpenStackCloud(c, o, tt.region, testProject, CloudOptions{Window: 300 * time.Millisecond}), withRegistered(tt.nodes, tt.spec.node, "node-off"), nil, testPolicy)
				csr := makeCSR(t, tt.spec)
				var d Decision
				var err error
				if mode == "alone" {
					d, err = e.Evaluate(context.Background(), csr)
				} else {
					d, err = evaluateInABatch(t, e, csr, c, o, tt.nodes)
				}
				checkLookupCase(t, tt.noDecision, tt.err, tt.verdict, tt.reason, d, err)
			})
		}
	}
}

// evaluateInABatch decides csr together with another request, both asked
// within the coalescing window after a first lookup: one request each for
// servers, ports and floating IPs answers both.
func evaluateInABatch(t *testing.T, e *Evaluator, csr *certificatesv1.CertificateSigningRequest, c *openstacktest.Compute, o *fakeOwnership, nodes []*corev1.Node) (Decision, error) {
	t.Helper()
	other := makeCSR(t, csrSpec{name: "other", node: "node-off", ips: []string{"10.0.0.12"}})
	_, _ = e.Evaluate(context.Background(), other) // starts the window
	getsBefore, listsBefore := novaCalls(c)
	neutronTargetedBefore, neutronListsBefore := o.calls()
	var wg sync.WaitGroup
	var d Decision
	var err error
	wg.Go(func() { d, err = e.Evaluate(context.Background(), csr) })
	wg.Go(func() { _, _ = e.Evaluate(context.Background(), other) })
	wg.Wait()
	gets, lists := novaCalls(c)
	t.Logf("the batch cost %d listing(s) and %d targeted call(s)", lists-listsBefore, gets-getsBefore)
	if lists != listsBefore+1 {
		t.Fatalf("two requests in one window cost %d listings, want 1", lists-listsBefore)
	}
	// Neutron is asked only about a server the checks can approve (running,
	// the project's): its ports, and the floating IPs on them when an IP
	// asked for is no fixed IP of them. "other" is SHUTOFF; a Node whose
	// providerID is not OpenStack's resolves to no server.
	wantCalls := 0
	cr, perr := parseCSR(csr.Spec.Request)
	if perr != nil {
		t.Fatal(perr)
	}
	id := "id-" + strings.TrimPrefix(strings.TrimPrefix(cr.Subject.CommonName, "system:node:"), "node-")
	for _, n := range nodes {
		if _, _, err := openstack.ParseProviderID(n.Spec.ProviderID); err != nil {
			id = ""
		}
	}
	if i := slices.IndexFunc(o.servers, func(s openstack.Server) bool { return s.ID == id }); i >= 0 &&
		o.servers[i].Status == openstack.StatusActive && o.servers[i].TenantID == testProject {
		wantCalls = 1
		var ports []openstack.Port
		for _, v := range o.views() {
			for _, p := range v.Ports {
				if p.DeviceID == id && p.ProjectID == testProject {
					ports = append(ports, p)
				}
			}
		}
		var asked []string
		for _, ip := range cr.IPAddresses {
			asked = append(asked, ip.String())
		}
		if len(ports) > 0 && needsFloatingIPs(asked, ports) {
			wantCalls = 3 // and the trunks on them (none here: no subport listing)
		}
	}
	neutronTargeted, neutronLists := o.calls()
	if calls := neutronLists - neutronListsBefore + neutronTargeted - neutronTargetedBefore; c.Err() == nil && calls != wantCalls {
		t.Fatalf("two requests in one window cost %d Neutron calls (%d port listings), want %d (the ports of the servers that can be approved, floating IPs and trunks on them if asked for)",
			calls, neutronLists-neutronListsBefore, wantCalls)
	}
	return d, err
}

func checkLookupCase(t *testing.T, noDecision bool, wantErr error, verdict Verdict, reason string, d Decision, err error) {
	t.Helper()
	if noDecision {
		if err == nil || d.Verdict == Approve || d.Verdict == Deny {
			t.Fatalf("got %s/%s, %v; want no decision and an error", d.Verdict, d.Reason, err)
		}
		return
	}
	if wantErr != nil {
		if !errors.Is(err, wantErr) {
			t.Fatalf("got %s/%s, %v; want error %v", d.Verdict, d.Reason, err, wantErr)
		}
		return
	}
	if err != nil || d.Verdict != verdict || d.Reason != reason {
		t.Fatalf("got %s/%s (%s), %v; want %s/%s", d.Verdict, d.Reason, d.Message, err, verdict, reason)
	}
}

func TestCloudRateLimitCountsCallsNotRequests(t *testing.T) {
	servers := testCloud().servers
	c := newFakeCompute(servers, nil)
	cloud := NewOpenStackCloud(c, &fakeOwnership{servers: servers}, "", testProject, CloudOptions{QPS: 20, Burst: 1, Window: -1})
	start := time.Now()
	for range 5 {
		if _, err := cloud.InstanceForNode(context.Background(), "", "node-a", nil); err != nil {
			t.Fatal(err)
		}
	}
	if elapsed := time.Since(start); elapsed < 150*time.Millisecond {
		t.Errorf("5 lone lookups at 20/s with burst 1 took %s, want >= 200ms", elapsed)
	}

	// 200 requests at once: a handful of listings, well within the limit's
	// pace for 200 calls (10 s).
	c = newFakeCompute(servers, nil)
	o := &fakeOwnership{servers: servers}
	cloud = NewOpenStackCloud(c, o, "", testProject, CloudOptions{QPS: 20, Burst: 1, Window: 50 * time.Millisecond})
	start = time.Now()
	var wg sync.WaitGroup
	for i := range 200 {
		name := []string{"node-a", "node-b", "node-off"}[i%3]
		wg.Go(func() {
			if _, err := cloud.InstanceForNode(context.Background(), "openstack:///id-"+strings.TrimPrefix(name, "node-"), name, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	gets, lists := novaCalls(c)
	nt, nl := o.calls()
	if elapsed := time.Since(start); elapsed > 3*time.Second || gets+lists+nt+nl > 30 {
		t.Errorf("200 concurrent requests: %d GETs and %d listings of Nova, %d targeted requests and %d listings of Neutron in %s; want a few calls in well under 10 s",
			gets, lists, nt, nl, elapsed)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if inst, err := cloud.InstanceForNode(ctx, "", "node-a", nil); err == nil {
		t.Errorf("a cancelled lookup answered %+v; want an error (never a decision)", inst)
	}
}

// TestABatchListsTheServersANodeNameBindsTo: Nodes named by FQDN (the DNS
// suffix of the name binding) with providerIDs are answered by the batch's
// listing by name, not by a targeted lookup each.
func TestABatchListsTheServersANodeNameBindsTo(t *testing.T) {
	servers := testCloud().servers
	c := newFakeCompute(servers, nil)
	o := &fakeOwnership{servers: servers}
	cloud := NewOpenStackCloud(c, o, "", testProject, CloudOptions{Window: 300 * time.Millisecond, DNSSuffixes: []string{"Example.COM."}})
	ctx := context.Background()
	_, _ = cloud.InstanceForNode(ctx, "", "node-off", nil) // starts the window
	getsBefore, listsBefore := novaCalls(c)
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		wg.Go(func() {
			inst, err := cloud.InstanceForNode(ctx, "openstack:///id-"+name, "node-"+name+".example.com", []netip.Addr{netip.MustParseAddr("10.0.0.10")})
			if err != nil || inst.Server.ID != "id-"+name || inst.Ownership == nil {
				t.Errorf("node-%s.example.com: %+v, %v; want server id-%s with its ports", name, inst, err, name)
			}
		})
	}
	wg.Wait()
	if gets, lists := novaCalls(c); gets != getsBefore || lists != listsBefore+1 {
		t.Errorf("two Nodes named by FQDN cost %d listings and %d targeted lookups, want 1 and 0", lists-listsBefore, gets-getsBefore)
	}
}

func (f *fakeOwnership) TrunksOfPorts(_ context.Context, portIDs []string) ([]openstack.Trunk, error) {
	if err := f.count(false); err != nil {
		return nil, err
	}
	if f.trunkErr != nil {
		return nil, f.trunkErr
	}
	var out []openstack.Trunk
	for _, v := range f.views() {
		for _, t := range v.Trunks {
			if slices.Contains(portIDs, t.PortID) {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

func (f *fakeOwnership) PortsByID(_ context.Context, ids []string) ([]openstack.Port, error) {
	if err := f.count(false); err != nil {
		return nil, err
	}
	var out []openstack.Port
	for _, v := range f.views() {
		for _, p := range slices.Concat(v.Ports, v.Subports) {
			if slices.Contains(ids, p.ID) {
				out = append(out, p)
			}
		}
	}
	return out, nil
}
