package approver

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/openstack"
)

// fakeCompute is Nova as openstack.Compute sees it, for testing the real
// lookup (openstack.ServerForNode) behind NewOpenStackCloud.
type fakeCompute struct {
	servers []openstack.Server
	err     error
}

var _ openstack.Compute = (*fakeCompute)(nil)

// fakeOwnership is Neutron for fakeCompute's servers (derivedView).
type fakeOwnership struct{ compute *fakeCompute }

func (f fakeOwnership) ServerPorts(ctx context.Context, serverID, projectID string) ([]openstack.Port, error) {
	srv, err := f.compute.GetServer(ctx, serverID)
	if err != nil {
		return nil, err
	}
	var out []openstack.Port
	for _, p := range derivedView(srv).Ports {
		if p.ProjectID == projectID {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f fakeOwnership) FloatingIPsOfPorts(_ context.Context, portIDs []string) ([]openstack.FloatingIP, error) {
	var out []openstack.FloatingIP
	for i := range f.compute.servers {
		for _, fip := range derivedView(&f.compute.servers[i]).FloatingIPs {
			if slices.Contains(portIDs, fip.PortID) {
				out = append(out, fip)
			}
		}
	}
	return out, nil
}

func (f fakeOwnership) Networks(_ context.Context, ids []string) ([]openstack.NetworkInfo, error) {
	var out []openstack.NetworkInfo
	for _, id := range ids {
		out = append(out, openstack.NetworkInfo{ID: id, Name: strings.TrimPrefix(id, "net-"), ProjectID: testProject})
	}
	return out, nil
}

func (f *fakeCompute) GetServer(_ context.Context, id string) (*openstack.Server, error) {
	if f.err != nil {
		return nil, f.err
	}
	for _, s := range f.servers {
		if s.ID == id && s.Status != openstack.StatusDeleted {
			return &s, nil
		}
	}
	return nil, fmt.Errorf("server %s: %w", id, openstack.ErrNotFound)
}

func (f *fakeCompute) ListServers(_ context.Context, opts openstack.ListServersOpts) ([]openstack.Server, error) {
	if f.err != nil {
		return nil, f.err
	}
	re, err := regexp.Compile(opts.Name)
	if err != nil {
		return nil, err
	}
	var out []openstack.Server
	for _, s := range f.servers {
		if re.MatchString(s.Name) {
			out = append(out, s)
		}
	}
	return out, nil
}

func TestOpenStackCloudLookups(t *testing.T) {
	compute := &fakeCompute{servers: testCloud().servers}
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
		{name: "found by exact name before the Node exists", spec: csrSpec{node: "node-b", ips: []string{"198.18.0.11"}}, verdict: Approve, reason: ReasonVerified},
		{name: "provider ID of another cloud is denied", nodes: []*corev1.Node{node("node-a", "aws:///us-east-1a/i-0123")}, spec: csrSpec{node: "node-a", ips: []string{"10.0.0.10"}}, verdict: Deny, reason: ReasonInvalidProviderID},
		{name: "provider ID of another region is no decision: this cloud.conf cannot tell", region: "RegionOne", nodes: []*corev1.Node{node("node-a", "openstack://RegionTwo/id-a")}, spec: csrSpec{node: "node-a", ips: []string{"10.0.0.10"}}, noDecision: true},
		{name: "a name that is a prefix of a server's is not found", spec: csrSpec{node: "node", ips: []string{"10.0.0.10"}}, verdict: Deny, reason: ReasonInstanceNotFound},
		{name: "a name as a regular expression finds nothing", spec: csrSpec{node: "node-.", ips: []string{"10.0.0.10"}}, verdict: Deny, reason: ReasonInstanceNotFound},
		{name: "two servers of the node's name are ambiguous", spec: csrSpec{node: "twin", ips: []string{"10.0.0.14"}}, verdict: Deny, reason: ReasonInstanceAmbiguous},
		{name: "a deleted server is not found by provider ID", nodes: []*corev1.Node{node("node-dead", "openstack:///id-dead")}, spec: csrSpec{node: "node-dead", ips: []string{"10.0.0.13"}}, verdict: Deny, reason: ReasonInstanceNotFound},
		{name: "a Nova error is no decision", err: errors.New("nova: 500"), spec: csrSpec{node: "node-a", ips: []string{"10.0.0.10"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := *compute
			c.err = tt.err
			e := NewEvaluator(NewOpenStackCloud(&c, fakeOwnership{&c}, tt.region, testProject), nodeGetter(tt.nodes...), nil, testPolicy)
			d, err := e.Evaluate(context.Background(), makeCSR(t, tt.spec))
			if tt.noDecision {
				if err == nil || d.Verdict == Approve || d.Verdict == Deny {
					t.Fatalf("got %s/%s, %v; want no decision and an error", d.Verdict, d.Reason, err)
				}
				return
			}
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("got %s/%s, %v; want error %v", d.Verdict, d.Reason, err, tt.err)
				}
				return
			}
			if err != nil || d.Verdict != tt.verdict || d.Reason != tt.reason {
				t.Fatalf("got %s/%s (%s), %v; want %s/%s", d.Verdict, d.Reason, d.Message, err, tt.verdict, tt.reason)
			}
		})
	}
}

func TestRateLimitedCloudSpacesCalls(t *testing.T) {
	cloud := testCloud()
	limited := RateLimited(cloud, 20, 1)
	start := time.Now()
	for range 5 {
		if _, err := limited.ServerForNode(context.Background(), "", "node-a"); err != nil {
			t.Fatal(err)
		}
	}
	if elapsed := time.Since(start); elapsed < 150*time.Millisecond {
		t.Errorf("5 calls at 20/s with burst 1 took %s, want >= 200ms", elapsed)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := limited.ServerForNode(ctx, "", "node-a")
	if err == nil || !strings.Contains(err.Error(), "rate limit") {
		t.Errorf("a cancelled wait: %v, want a rate limit error (never a decision)", err)
	}
}
