package openstack_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stackward/stackward/internal/openstacktest"
	"github.com/stackward/stackward/pkg/openstack"
)

func TestParseProviderID(t *testing.T) {
	const id = "4f1a7b0e-2c3d-4e5f-8a9b-0c1d2e3f4a5b"
	tests := []struct {
		name       string
		pid        string
		wantRegion string
		wantID     string
		wantErr    bool
	}{
		{name: "the regionless form has an empty region", pid: "openstack:///" + id, wantID: id},
		{name: "the regional form has its region", pid: "openstack://RegionOne/" + id, wantRegion: "RegionOne", wantID: id},
		{name: "another scheme is invalid", pid: "aws:///" + id, wantErr: true},
		{name: "a missing ID is invalid", pid: "openstack:///", wantErr: true},
		{name: "no slash after the region is invalid", pid: "openstack://" + id, wantErr: true},
		{name: "a path in the ID is invalid", pid: "openstack:///../servers/" + id, wantErr: true},
		{name: "a query in the ID is invalid", pid: "openstack:///" + id + "?all_tenants=1", wantErr: true},
		{name: "an empty providerID is invalid", pid: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			region, got, err := openstack.ParseProviderID(tt.pid)
			if tt.wantErr {
				if !errors.Is(err, openstack.ErrInvalidProviderID) {
					t.Fatalf("openstack.ParseProviderID(%q) = %q, %q, %v; want openstack.ErrInvalidProviderID", tt.pid, region, got, err)
				}
				return
			}
			if err != nil || region != tt.wantRegion || got != tt.wantID {
				t.Fatalf("openstack.ParseProviderID(%q) = %q, %q, %v; want %q, %q", tt.pid, region, got, err, tt.wantRegion, tt.wantID)
			}
			if back := openstack.ProviderID(region, got); back != tt.pid {
				t.Errorf("openstack.ProviderID(%q, %q) = %q, want %q", region, got, back, tt.pid)
			}
		})
	}
}

func TestServerForNode(t *testing.T) {
	servers := []openstack.Server{
		{ID: "id-1", Name: "node-1", Status: openstack.StatusActive},
		{ID: "id-10", Name: "node-10", Status: openstack.StatusActive},
		{ID: "id-dot", Name: "node.2", Status: openstack.StatusActive},
		{ID: "id-x2", Name: "nodeX2", Status: openstack.StatusActive},
		{ID: "id-dup-a", Name: "dup", Status: openstack.StatusActive},
		{ID: "id-dup-b", Name: "dup", Status: openstack.StatusShutoff},
		{ID: "id-gone", Name: "gone", Status: openstack.StatusDeleted},
		{ID: "id-old", Name: "reborn", Status: openstack.StatusSoftDeleted},
		{ID: "id-new", Name: "reborn", Status: openstack.StatusActive},
	}
	tests := []struct {
		name       string
		providerID string
		nodeName   string
		wantID     string
		wantErr    error
		wantGets   int
		wantLists  int
		wantFilter string
	}{
		{name: "a providerID is looked up by ID with one GET", providerID: "openstack:///id-10", nodeName: "node-1", wantID: "id-10", wantGets: 1},
		{name: "an unknown providerID is not found", providerID: "openstack:///id-404", wantErr: openstack.ErrNotFound, wantGets: 1},
		{name: "a bad providerID is an error without a call", providerID: "gce:///id-1", wantErr: openstack.ErrInvalidProviderID},
		{name: "a name matches exactly, not as a prefix", nodeName: "node-1", wantID: "id-1", wantLists: 1, wantFilter: `^node-1$`},
		{name: "regex characters in a name are escaped", nodeName: "node.2", wantID: "id-dot", wantLists: 1, wantFilter: `^node\.2$`},
		{name: "a name matching no server is not found", nodeName: "node-3", wantErr: openstack.ErrNotFound, wantLists: 1},
		{name: "a name matching two servers is ambiguous", nodeName: "dup", wantErr: openstack.ErrAmbiguous, wantLists: 1},
		{name: "a deleted server does not match its name", nodeName: "gone", wantErr: openstack.ErrNotFound, wantLists: 1},
		{name: "a soft-deleted predecessor does not make a re-created server ambiguous", nodeName: "reborn", wantID: "id-new", wantLists: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := openstacktest.NewCompute(servers...)
			fc.ListDeleted = true // ServerForNode must leave them out itself
			got, err := openstack.ServerForNode(context.Background(), fc, tt.providerID, tt.nodeName)
			gets, lists := fc.Counts()
			if gets != tt.wantGets || lists != tt.wantLists {
				t.Errorf("calls: %d gets, %d lists; want %d, %d", gets, lists, tt.wantGets, tt.wantLists)
			}
			if calls := fc.Calls(); tt.wantFilter != "" && (len(calls) != 1 || calls[0].Get || calls[0].Opts.Name != tt.wantFilter) {
				t.Errorf("calls %+v, want one listing with name %q", calls, tt.wantFilter)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("openstack.ServerForNode = %+v, %v; want %v", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got.ID != tt.wantID {
				t.Fatalf("openstack.ServerForNode = %+v, %v; want %s", got, err, tt.wantID)
			}
		})
	}
}

func TestAmbiguousNamesListEveryServer(t *testing.T) {
	fc := openstacktest.NewCompute([]openstack.Server{{ID: "b", Name: "n"}, {ID: "a", Name: "n"}, {ID: "c", Name: "n"}}...)
	_, err := openstack.ServerForNode(context.Background(), fc, "", "n")
	if !errors.Is(err, openstack.ErrAmbiguous) || !strings.HasSuffix(err.Error(), ": a, b, c") || openstack.IsNotFound(err) {
		t.Fatalf("err = %v; want openstack.ErrAmbiguous naming a, b, c and not a not-found", err)
	}
}
