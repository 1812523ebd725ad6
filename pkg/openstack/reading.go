package openstack

import (
	"context"
	"sync"
	"time"
)

// sharedReading is one reading of the cloud kept for a TTL: callers within
// the TTL get it, and concurrent callers past it share one refresh. A
// failed reading is kept like a good one, so an outage costs one (retried)
// read per TTL, not one per caller; but not one the caller gave up on,
// which says nothing about the cloud.
type sharedReading[T any] struct {
	ttl  time.Duration
	now  func() time.Time
	read func(ctx context.Context) (T, error)

	mu         sync.Mutex
	cur        *reading[T]
	refreshing chan struct{} // closed when the running refresh ends
}

type reading[T any] struct {
	at  time.Time
	val T
	err error
}

func newSharedReading[T any](ttl time.Duration, read func(ctx context.Context) (T, error)) *sharedReading[T] {
	return &sharedReading[T]{ttl: ttl, now: time.Now, read: read}
}

// get returns a reading younger than the TTL, reading the cloud when there
// is none.
func (s *sharedReading[T]) get(ctx context.Context) (T, error) {
	s.mu.Lock()
	for {
		if r := s.cur; r != nil && s.now().Sub(r.at) < s.ttl {
			s.mu.Unlock()
			return r.val, r.err
		}
		wait := s.refreshing
		if wait == nil {
			break
		}
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
		s.mu.Lock()
	}
	done := make(chan struct{})
	s.refreshing = done
	s.mu.Unlock()

	r := &reading[T]{at: s.now()}
	r.val, r.err = s.read(ctx)

	s.mu.Lock()
	if r.err == nil || ctx.Err() == nil {
		s.cur = r
	}
	s.refreshing = nil
	close(done)
	s.mu.Unlock()
	return r.val, r.err
}

// invalidate drops the reading: the next get reads the cloud.
func (s *sharedReading[T]) invalidate() {
	s.mu.Lock()
	s.cur = nil
	s.mu.Unlock()
}
