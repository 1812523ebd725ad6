package approver

import (
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// A flooding node has its requests deferred thousands of times (over the
// pending cap, over its budgets): one debug line each would be a flood of
// its own in the approver's log. deferralLog writes at most one line per
// node and reason per interval, at debug level, counting the deferrals it
// did not write.

// deferralLogInterval is the least time between two lines of one node and reason.
const deferralLogInterval = 30 * time.Second

// deferralLogVerbosity is the debug level of deferral lines.
const deferralLogVerbosity = 4

// maxDeferralLogKeys bounds the state: beyond it, keys not written to
// within an interval are forgotten.
const maxDeferralLogKeys = 4096

type deferralKey struct{ user, reason string }

type deferralState struct {
	last       time.Time
	suppressed int
}

type deferralLog struct {
	now      func() time.Time
	interval time.Duration

	mu    sync.Mutex
	state map[deferralKey]*deferralState
}

func newDeferralLog(now func() time.Time, interval time.Duration) *deferralLog {
	return &deferralLog{now: now, interval: interval, state: map[deferralKey]*deferralState{}}
}

// log writes msg for user's deferral for reason unless one was written
// within the interval; the line names how many were left unwritten since.
func (d *deferralLog) log(logger logr.Logger, user, reason, msg string, kv ...any) {
	v := logger.V(deferralLogVerbosity)
	if !v.Enabled() {
		return // nothing to count either: no line would ever carry it
	}
	d.mu.Lock()
	now := d.now()
	k := deferralKey{user, reason}
	s := d.state[k]
	if s == nil && len(d.state) >= maxDeferralLogKeys {
		d.pruneLocked(now)
		if len(d.state) >= maxDeferralLogKeys {
			// Still full: the extra nodes share one line per interval
			// (one key per reason beyond the bound).
			k.user = ""
			s = d.state[k]
		}
	}
	if s != nil && now.Sub(s.last) < d.interval {
		s.suppressed++
		d.mu.Unlock()
		return
	}
	if s == nil {
		s = &deferralState{}
		d.state[k] = s
	}
	suppressed := s.suppressed
	s.last, s.suppressed = now, 0
	d.mu.Unlock()
	v.Info(msg, append(kv, "reason", reason, "deferralsNotLogged", suppressed, "logInterval", d.interval)...)
}

func (d *deferralLog) pruneLocked(now time.Time) {
	for k, s := range d.state {
		if now.Sub(s.last) >= d.interval {
			delete(d.state, k)
		}
	}
}
