package openstack

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestCoalescerNeverAnswersFromAnEarlierFetch: a key that joins while a
// fetch runs is answered by the next fetch, started after it joined; keys
// waiting together share one fetch.
func TestCoalescerNeverAnswersFromAnEarlierFetch(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var batches []Batch[string]
	gen := 0
	c := NewCoalescer(0, time.Minute, 1, func(_ context.Context, b Batch[string]) (map[string]int, error) {
		mu.Lock()
		gen++
		g := gen
		batches = append(batches, b)
		mu.Unlock()
		if g == 1 {
			<-release // the first fetch is in flight while others join
		}
		out := map[string]int{}
		for _, k := range b.Keys {
			out[k] = g
		}
		return out, nil
	})
	first := make(chan int)
	go func() {
		v, err := c.Do(context.Background(), "a")
		if err != nil {
			t.Error(err)
		}
		first <- v
	}()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return gen == 1 })

	// Observed while fetch 1 runs: "a" again (a renewal of the same node)
	// and two others. None may be answered by fetch 1.
	joined := time.Now()
	var wg sync.WaitGroup
	got := map[string]int{}
	var gmu sync.Mutex
	for _, k := range []string{"a", "b", "c"} {
		wg.Go(func() {
			v, err := c.Do(context.Background(), k)
			if err != nil {
				t.Error(err)
			}
			gmu.Lock()
			got[k] = v
			gmu.Unlock()
		})
	}
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.waiting) == 3 })
	close(release)
	if v := <-first; v != 1 {
		t.Errorf("the first lookup was answered by fetch %d, want 1", v)
	}
	wg.Wait()
	for k, v := range got {
		if v != 2 {
			t.Errorf("%q, asked while fetch 1 ran, was answered by fetch %d; want 2", k, v)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(batches) != 2 || len(batches[1].Keys) != 3 {
		t.Fatalf("batches %+v; want 2 fetches, the second for a, b and c once each", batches)
	}
	for i, b := range batches {
		if b.Started.Before(b.Newest) {
			t.Errorf("fetch %d started at %s, before its newest key joined at %s", i+1, b.Started, b.Newest)
		}
	}
	if batches[1].Started.Before(joined) {
		t.Errorf("fetch 2 started before its keys were asked")
	}
}

func TestCoalescerSpacesFetchesAndFailsClosed(t *testing.T) {
	var mu sync.Mutex
	var starts []time.Time
	boom := errors.New("nova: 503")
	fail := true
	c := NewCoalescer(100*time.Millisecond, time.Minute, 1, func(_ context.Context, b Batch[int]) (map[int]bool, error) {
		mu.Lock()
		defer mu.Unlock()
		starts = append(starts, b.Started)
		if fail {
			return nil, boom
		}
		out := map[int]bool{}
		for _, k := range b.Keys {
			if k != 13 { // a fetch that forgets a key
				out[k] = true
			}
		}
		return out, nil
	})
	if _, err := c.Do(context.Background(), 1); !errors.Is(err, boom) {
		t.Fatalf("a failed fetch answered %v; want its error", err)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			v, err := c.Do(context.Background(), i)
			switch {
			case i == 13 && err == nil:
				t.Errorf("a key the fetch did not answer got %v, want an error", v)
			case i != 13 && (err != nil || !v):
				t.Errorf("key %d: %v, %v", i, v, err)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(starts) > 3 {
		t.Errorf("51 lookups cost %d fetches, want at most 3", len(starts))
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < 100*time.Millisecond {
			t.Errorf("fetches %d and %d started %s apart, want >= the 100ms window", i, i+1, gap)
		}
	}
}

// TestCoalescerOverlapsSlowFetches: while a slow fetch runs, keys that
// join are fetched by a second one started after them and within about a
// window, not after the slow one ends; never more than overlap at once, and
// the second fetch never answers a key from before it joined.
func TestCoalescerOverlapsSlowFetches(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var batches []Batch[string]
	running, most := 0, 0
	c := NewCoalescer(20*time.Millisecond, time.Minute, 2, func(_ context.Context, b Batch[string]) (map[string]int, error) {
		mu.Lock()
		batches = append(batches, b)
		g := len(batches)
		running++
		most = max(most, running)
		mu.Unlock()
		defer func() { mu.Lock(); running--; mu.Unlock() }()
		if g <= 2 {
			<-release // the first two fetches are slow
		}
		out := map[string]int{}
		for _, k := range b.Keys {
			out[k] = g
		}
		return out, nil
	})
	answers := make(chan [2]any, 10)
	ask := func(k string) {
		go func() {
			v, err := c.Do(context.Background(), k)
			answers <- [2]any{k, v}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	ask("a")
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(batches) == 1 })
	joined := time.Now()
	ask("b")
	// Fetch 2 starts although fetch 1 is still running.
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(batches) == 2 })
	ask("c")
	// Both slots are taken: "c" waits for one, not for the window.
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	if len(batches) != 2 || most != 2 {
		t.Errorf("%d fetches started, at most %d at once, with two slow fetches running and overlap 2; want 2 and 2", len(batches), most)
	}
	mu.Unlock()
	close(release)
	want := map[string]int{"a": 1, "b": 2, "c": 3}
	for range 3 {
		a := <-answers
		if k, v := a[0].(string), a[1].(int); v != want[k] {
			t.Errorf("%q was answered by fetch %d, want %d", k, v, want[k])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if batches[1].Started.Before(joined) || batches[1].Started.Before(batches[1].Newest) {
		t.Errorf("fetch 2 started at %s, before its key joined at %s", batches[1].Started, joined)
	}
	if most > 2 {
		t.Errorf("%d fetches ran at once, want at most the overlap of 2", most)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
