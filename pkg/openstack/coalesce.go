package openstack

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Batch is what one fetch of a Coalescer answers: every key that was
// waiting when the fetch started. Newest is when the last of them joined;
// the fetch starts after it, so nothing it reads predates any waiter.
type Batch[K comparable] struct {
	Keys   []K
	Newest time.Time
	// Started is when the fetch was started (after Newest).
	Started time.Time
}

// Coalescer lets many concurrent lookups share one fetch, without ever
// answering a lookup from data read before the lookup was made: a fetch
// takes the keys waiting at its start, and a key that joins while a fetch
// runs waits for the next one. Fetches start at most once per window, and
// at most overlap of them run at once, so a burst of N lookups costs about
// (burst duration / window) fetches rather than N, a lookup waits at most
// about one window when fetches take longer than a window, and a lone
// lookup after a quiet period is fetched at once.
type Coalescer[K comparable, V any] struct {
	fetch   func(ctx context.Context, b Batch[K]) (map[K]V, error)
	window  time.Duration
	timeout time.Duration
	now     func() time.Time
	// slots holds a token per running fetch: its capacity is the overlap.
	slots chan struct{}

	mu        sync.Mutex
	waiting   []*coalesceWaiter[K, V]
	running   bool
	lastStart time.Time
}

type coalesceWaiter[K comparable, V any] struct {
	key    K
	joined time.Time
	done   chan struct{}
	val    V
	err    error
}

// NewCoalescer returns a Coalescer whose fetches run fetch, starting at
// most one per window (0: back to back) with at most overlap running at
// once (below 1: one), each bounded by timeout (0: two minutes). fetch must
// answer every key of its batch or fail as a whole; a key it leaves out is
// an error for that key, never a zero value.
func NewCoalescer[K comparable, V any](window, timeout time.Duration, overlap int, fetch func(ctx context.Context, b Batch[K]) (map[K]V, error)) *Coalescer[K, V] {
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	return &Coalescer[K, V]{fetch: fetch, window: window, timeout: timeout, now: time.Now, slots: make(chan struct{}, max(1, overlap))}
}

// Do waits for the first fetch started after this call and returns its
// answer for key. A failed fetch fails every key of its batch. ctx ending
// stops the wait, not the fetch (other keys may need it).
func (c *Coalescer[K, V]) Do(ctx context.Context, key K) (V, error) {
	w := &coalesceWaiter[K, V]{key: key, done: make(chan struct{})}
	c.mu.Lock()
	w.joined = c.now()
	c.waiting = append(c.waiting, w)
	if !c.running {
		c.running = true
		go c.run()
	}
	c.mu.Unlock()
	select {
	case <-w.done:
		return w.val, w.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

// run starts fetch after fetch until nobody waits: each once the window
// since the previous start has passed and a slot is free. Keys that join
// meanwhile share the fetch; the batch is taken only once the fetch can
// start, so it starts after every key of it joined.
func (c *Coalescer[K, V]) run() {
	for {
		c.mu.Lock()
		if len(c.waiting) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		pause := c.window - c.now().Sub(c.lastStart)
		c.mu.Unlock()
		if pause > 0 {
			time.Sleep(pause)
		}
		c.slots <- struct{}{}
		c.mu.Lock()
		batch := c.waiting
		c.waiting = nil
		started := c.now()
		c.lastStart = started
		c.mu.Unlock()
		go func() {
			defer func() { <-c.slots }()
			c.fetchBatch(batch, started)
		}()
	}
}

func (c *Coalescer[K, V]) fetchBatch(batch []*coalesceWaiter[K, V], started time.Time) {
	b := Batch[K]{Started: started}
	seen := make(map[K]bool, len(batch))
	for _, w := range batch {
		if w.joined.After(b.Newest) {
			b.Newest = w.joined
		}
		if !seen[w.key] {
			seen[w.key] = true
			b.Keys = append(b.Keys, w.key)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	vals, err := c.fetch(ctx, b)
	cancel()
	for _, w := range batch {
		switch v, ok := vals[w.key]; {
		case err != nil:
			w.err = err
		case !ok:
			w.err = fmt.Errorf("coalesced fetch of %d keys gave no answer for %v", len(b.Keys), w.key)
		default:
			w.val = v
		}
		close(w.done)
	}
}
