package openstack

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func manyServers(n int) []Server {
	out := make([]Server, n)
	for i := range out {
		out[i] = Server{ID: fmt.Sprintf("id-%d", i), Name: fmt.Sprintf("node-%d", i), Status: StatusActive}
	}
	return out
}

// testCache is a ServerCache over fc with a clock the test moves.
func testCache(fc *fakeCompute, ttl time.Duration) (*ServerCache, *time.Time) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewServerCache(fc, ttl)
	c.now = func() time.Time { return now }
	return c, &now
}

func TestServerCacheServesManyNodesFromOneListing(t *testing.T) {
	ctx := context.Background()
	fc := &fakeCompute{servers: manyServers(100)}
	cache, now := testCache(fc, 10*time.Second)

	for i := range 100 {
		var s *Server
		var err error
		if i%2 == 0 {
			s, err = ServerForNode(ctx, cache, ProviderID("", fmt.Sprintf("id-%d", i)), "")
		} else {
			s, err = ServerForNode(ctx, cache, "", fmt.Sprintf("node-%d", i))
		}
		if err != nil || s.ID != fmt.Sprintf("id-%d", i) {
			t.Fatalf("node %d: %+v, %v", i, s, err)
		}
	}
	if gets, lists := fc.counts(); gets != 0 || lists != 1 {
		t.Fatalf("syncing 100 nodes cost %d gets and %d lists, want 0 and 1", gets, lists)
	}

	*now = now.Add(9 * time.Second)
	if _, err := cache.GetServer(ctx, "id-5"); err != nil {
		t.Fatal(err)
	}
	if _, lists := fc.counts(); lists != 1 {
		t.Fatalf("a listing younger than the TTL was refreshed (%d lists)", lists)
	}
	*now = now.Add(2 * time.Second)
	if _, err := cache.GetServer(ctx, "id-5"); err != nil {
		t.Fatal(err)
	}
	if _, lists := fc.counts(); lists != 2 {
		t.Fatalf("a listing older than the TTL was not refreshed (%d lists)", lists)
	}
}

func TestServerCacheAsksTheCloudAboutWhatItDoesNotKnow(t *testing.T) {
	ctx := context.Background()
	fc := &fakeCompute{servers: manyServers(3)}
	cache, _ := testCache(fc, time.Minute)
	if _, err := cache.GetServer(ctx, "id-0"); err != nil {
		t.Fatal(err)
	}
	// A server created after the listing.
	fc.mu.Lock()
	fc.servers = append(fc.servers, Server{ID: "new", Name: "node-new", Status: StatusActive})
	fc.mu.Unlock()

	tests := []struct {
		name      string
		lookup    func() (*Server, error)
		wantID    string
		wantErr   error
		wantGets  int
		wantLists int
	}{
		{"an ID missing from the listing is fetched directly", func() (*Server, error) { return cache.GetServer(ctx, "new") }, "new", nil, 1, 0},
		{"a name missing from the listing is listed directly", func() (*Server, error) { return ServerForNode(ctx, cache, "", "node-new") }, "new", nil, 0, 1},
		{"an ID unknown to the cloud is not found only because the cloud says so", func() (*Server, error) { return cache.GetServer(ctx, "nope") }, "", ErrNotFound, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gets0, lists0 := fc.counts()
			s, err := tt.lookup()
			gets, lists := fc.counts()
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
	fc := &fakeCompute{servers: manyServers(10), listErr: outage}
	cache, now := testCache(fc, 10*time.Second)

	for i := range 10 {
		_, err := cache.GetServer(ctx, fmt.Sprintf("id-%d", i))
		if !errors.Is(err, outage) || IsNotFound(err) {
			t.Fatalf("node %d: err = %v; want the outage, never not-found", i, err)
		}
	}
	if gets, lists := fc.counts(); gets != 0 || lists != 1 {
		t.Fatalf("an outage cost %d gets and %d lists for 10 nodes, want 0 and 1", gets, lists)
	}
	fc.mu.Lock()
	fc.listErr = nil
	fc.mu.Unlock()
	*now = now.Add(10 * time.Second)
	if s, err := cache.GetServer(ctx, "id-3"); err != nil || s.ID != "id-3" {
		t.Fatalf("after the outage: %+v, %v", s, err)
	}
}

func TestServerCacheSharesOneRefreshBetweenConcurrentCallers(t *testing.T) {
	fc := &fakeCompute{servers: manyServers(20), block: make(chan struct{})}
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
		if _, lists := fc.counts(); lists >= 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(fc.block)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if gets, lists := fc.counts(); gets != 0 || lists != 1 {
		t.Fatalf("20 concurrent lookups cost %d gets and %d lists, want 0 and 1", gets, lists)
	}
}

func TestServerCacheDoesNotRememberACallerGivingUp(t *testing.T) {
	fc := &fakeCompute{servers: manyServers(2), block: make(chan struct{})}
	cache, _ := testCache(fc, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := cache.GetServer(ctx, "id-0"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	close(fc.block)
	if s, err := cache.GetServer(context.Background(), "id-0"); err != nil || s.ID != "id-0" {
		t.Fatalf("after a canceled refresh: %+v, %v", s, err)
	}
}

func TestServerCacheListsInTheCloudsOrder(t *testing.T) {
	fc := &fakeCompute{servers: manyServers(50)}
	cache, _ := testCache(fc, time.Minute)
	list, err := cache.ListServers(context.Background(), ListServersOpts{})
	if err != nil || len(list) != 50 {
		t.Fatalf("ListServers = %d servers, %v", len(list), err)
	}
	for i, s := range list {
		if s.ID != fmt.Sprintf("id-%d", i) {
			t.Fatalf("server %d is %s", i, s.ID)
		}
	}
	if _, err := cache.ListServers(context.Background(), ListServersOpts{Status: StatusShutoff}); err != nil {
		t.Fatal(err)
	}
	if _, lists := fc.counts(); lists != 2 {
		t.Errorf("a filtered listing should go to the cloud: %d lists, want 2", lists)
	}
}
