package openstacktest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stackward/stackward/pkg/openstack"
)

func ids(ss []openstack.Server) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

// TestComputeBehavesAsDocumented: the double answers as Nova does for a
// project member unless told otherwise, since every test that uses it
// relies on that.
func TestComputeBehavesAsDocumented(t *testing.T) {
	ctx := context.Background()
	servers := []openstack.Server{
		{ID: "b", Name: "node-1", Status: openstack.StatusActive},
		{ID: "a", Name: "node-10", Status: openstack.StatusShutoff},
		{ID: "gone", Name: "node-1", Status: openstack.StatusDeleted},
	}
	c := NewCompute(servers...)
	if _, err := c.GetServer(ctx, "gone"); !errors.Is(err, openstack.ErrNotFound) {
		t.Errorf("GET of a DELETED server: %v, want not found", err)
	}
	if got, err := c.ListServers(ctx, openstack.ListServersOpts{Name: "node-1"}); err != nil || !slices.Equal(ids(got), []string{"b", "a"}) {
		t.Errorf("list by name node-1: %v, %v; want b and a (a regular expression search, the cloud's order, no DELETED)", ids(got), err)
	}
	if got, _ := c.ListServers(ctx, openstack.ListServersOpts{Status: openstack.StatusShutoff}); !slices.Equal(ids(got), []string{"a"}) {
		t.Errorf("list by status SHUTOFF: %v, want a", ids(got))
	}
	c = NewCompute(servers...)
	c.ReturnDeleted, c.ListDeleted = true, true
	if s, err := c.GetServer(ctx, "gone"); err != nil || s.ID != "gone" {
		t.Errorf("GET of a DELETED server with ReturnDeleted: %v, %v", s, err)
	}
	if got, _ := c.ListServers(ctx, openstack.ListServersOpts{Name: "^node-1$"}); !slices.Equal(ids(got), []string{"b", "gone"}) {
		t.Errorf("list with ListDeleted: %v, want b and gone", ids(got))
	}
	if gets, lists := c.Counts(); gets != 1 || lists != 1 {
		t.Errorf("counts %d gets, %d lists; want 1, 1", gets, lists)
	}

	outage := errors.New("503")
	c.SetListErr(outage)
	if _, err := c.ListServers(ctx, openstack.ListServersOpts{}); !errors.Is(err, outage) {
		t.Errorf("list during a listing outage: %v", err)
	}
	if _, err := c.GetServer(ctx, "b"); err != nil {
		t.Errorf("GET during a listing outage: %v, want it to work", err)
	}
	c.SetErr(outage)
	if _, err := c.GetServer(ctx, "b"); !errors.Is(err, outage) {
		t.Errorf("GET during an outage: %v", err)
	}
}

func TestBlockListsHoldsListingsUntilReleased(t *testing.T) {
	c := NewCompute(openstack.Server{ID: "a"})
	release := c.BlockLists()
	done := make(chan error, 1)
	go func() {
		_, err := c.ListServers(context.Background(), openstack.ListServersOpts{})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("listing returned %v before release", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("listing still blocked after release")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.BlockLists()
	if _, err := c.ListServers(ctx, openstack.ListServersOpts{}); !errors.Is(err, context.Canceled) {
		t.Errorf("a blocked listing whose context is done: %v", err)
	}
}
