package openstack_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stackward/stackward/internal/openstacktest"
	"github.com/stackward/stackward/pkg/openstack"
)

func manyServers(n int) []openstack.Server {
	out := make([]openstack.Server, n)
	for i := range out {
		out[i] = openstack.Server{ID: fmt.Sprintf("id-%d", i), Name: fmt.Sprintf("node-%d", i), Status: openstack.StatusActive}
	}
	return out
}

// testCache is a openstack.ServerCache over fc with a clock the test moves.
func testCache(fc *openstacktest.Compute, ttl time.Duration) (*openstack.ServerCache, *time.Time) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := openstack.NewServerCache(fc, ttl)
	c.SetClock(func() time.Time { return now })
	return c, &now
}

func TestServerCacheServesManyNodesFromOneListing(t *testing.T) {
	ctx := context.Background()
	fc := openstacktest.NewCompute(manyServers(100)...)
	cache, now := testCache(fc, 10*time.Second)

	for i := range 100 {
		var s *openstack.Server
		var err error
		if i%2 == 0 {
			s, err = openstack.ServerForNode(ctx, cache, openstack.ProviderID("", fmt.Sprintf("id-%d", i)), "")
		} else {
			s, err = openstack.ServerForNode(ctx, cache, "", fmt.Sprintf("node-%d", i))
		}
		if err != nil || s.ID != fmt.Sprintf("id-%d", i) {
			t.Fatalf("node %d: %+v, %v", i, s, err)
		}
	}
	if gets, lists := fc.Counts(); gets != 0 || lists != 1 {
		t.Fatalf("syncing 100 nodes cost %d gets and %d lists, want 0 and 1", gets, lists)
	}

	*now = now.Add(9 * time.Second)
	if _, err := cache.GetServer(ctx, "id-5"); err != nil {
		t.Fatal(err)
	}
	if _, lists := fc.Counts(); lists != 1 {
		t.Fatalf("a listing younger than the TTL was refreshed (%d lists)", lists)
	}
	*now = now.Add(2 * time.Second)
	if _, err := cache.GetServer(ctx, "id-5"); err != nil {
		t.Fatal(err)
	}
	if _, lists := fc.Counts(); lists != 2 {
		t.Fatalf("a listing older than the TTL was not refreshed (%d lists)", lists)
	}
}

func TestServerCacheAsksTheCloudAboutWhatItDoesNotKnow(t *testing.T) {
	ctx := context.Background()
	fc := openstacktest.NewCompute(manyServers(3)...)
	cache, _ := testCache(fc, time.Minute)
	if _, err := cache.GetServer(ctx, "id-0"); err != nil {
		t.Fatal(err)
	}
	// A server created after the listing.
	fc.Put(openstack.Server{ID: "new", Name: "node-new", Status: openstack.StatusActive})

	tests := []struct {
		name      string
		lookup    func() (*openstack.Server, error)
		wantID    string
		wantErr   error
		wantGets  int
		wantLists int
	}{
		{"an ID missing from the listing is fetched directly", func() (*openstack.Server, error) { return cache.GetServer(ctx, "new") }, "new", nil, 1, 0},
		{"a name missing from the listing is listed directly", func() (*openstack.Server, error) { return openstack.ServerForNode(ctx, cache, "", "node-new") }, "new", nil, 0, 1},
		{"an ID unknown to the cloud is not found only because the cloud says so", func() (*openstack.Server, error) { return cache.GetServer(ctx, "nope") }, "", openstack.ErrNotFound, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gets0, lists0 := fc.Counts()
			s, err := tt.lookup()
			gets, lists := fc.Counts()
			if gets-gets0 != tt.wantGets || lists-lists0 != tt.wantLists {
				t.Errorf("calls: %d gets, %d lists; want %d, %d", gets-gets0, lists-lists0, tt.wantGets, tt.wantLists)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %+v, %v; want %v", s, err, tt.wantErr)
				}
				return
			}
			if err != nil || s.ID != tt.wantID {
				t.Fatalf("got %+v, %v; want %s", s, err, tt.wantID)
			}
		})
	}
}

func TestServerCacheDuringAnOutage(t *testing.T) {
	ctx := context.Background()
	outage := errors.New("list servers: 503 Service Unavailable")
	fc := openstacktest.NewCompute(manyServers(10)...)
	fc.SetListErr(outage)
	cache, now := testCache(fc, 10*time.Second)

	for i := range 10 {
		_, err := cache.GetServer(ctx, fmt.Sprintf("id-%d", i))
		if !errors.Is(err, outage) || openstack.IsNotFound(err) {
			t.Fatalf("node %d: err = %v; want the outage, never not-found", i, err)
		}
	}
	if gets, lists := fc.Counts(); gets != 0 || lists != 1 {
		t.Fatalf("an outage cost %d gets and %d lists for 10 nodes, want 0 and 1", gets, lists)
	}
	fc.SetListErr(nil)
	*now = now.Add(10 * time.Second)
	if s, err := cache.GetServer(ctx, "id-3"); err != nil || s.ID != "id-3" {
		t.Fatalf("after the outage: %+v, %v", s, err)
	}
}

func TestServerCacheSharesOneRefreshBetweenConcurrentCallers(t *testing.T) {
	fc := openstacktest.NewCompute(manyServers(20)...)
	release := fc.BlockLists()
	cache, _ := testCache(fc, time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := cache.GetServer(context.Background(), fmt.Sprintf("id-%d", i))
			errs <- err
		}()
	}
	// Let the callers pile up on the one listing in flight, then release it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, lists := fc.Counts(); lists >= 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if gets, lists := fc.Counts(); gets != 0 || lists != 1 {
		t.Fatalf("20 concurrent lookups cost %d gets and %d lists, want 0 and 1", gets, lists)
	}
}

func TestServerCacheDoesNotRememberACallerGivingUp(t *testing.T) {
	fc := openstacktest.NewCompute(manyServers(2)...)
	release := fc.BlockLists()
	cache, _ := testCache(fc, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := cache.GetServer(ctx, "id-0"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	release()
	if s, err := cache.GetServer(context.Background(), "id-0"); err != nil || s.ID != "id-0" {
		t.Fatalf("after a canceled refresh: %+v, %v", s, err)
	}
}

func TestServerCacheListsInTheCloudsOrder(t *testing.T) {
	fc := openstacktest.NewCompute(manyServers(50)...)
	cache, _ := testCache(fc, time.Minute)
	list, err := cache.ListServers(context.Background(), openstack.ListServersOpts{})
	if err != nil || len(list) != 50 {
		t.Fatalf("ListServers = %d servers, %v", len(list), err)
	}
	for i, s := range list {
		if s.ID != fmt.Sprintf("id-%d", i) {
			t.Fatalf("server %d is %s", i, s.ID)
		}
	}
	if _, err := cache.ListServers(context.Background(), openstack.ListServersOpts{Status: openstack.StatusShutoff}); err != nil {
		t.Fatal(err)
	}
	if _, lists := fc.Counts(); lists != 2 {
		t.Errorf("a filtered listing should go to the cloud: %d lists, want 2", lists)
	}
}
