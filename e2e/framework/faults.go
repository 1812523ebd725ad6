package framework

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"
)

// FaultKind is how a fault hits a service's processes.
type FaultKind string

const (
	// FaultRestart stops the service (SIGTERM to its process group,
	// SIGKILL after a grace period) and starts it again when the fault ends.
	FaultRestart FaultKind = "restart"
	// FaultKill SIGKILLs the service's process group at once (whatever it
	// was doing is cut off) and starts it again when the fault ends.
	FaultKill FaultKind = "kill"
	// FaultFreeze SIGSTOPs the service's process group: it keeps its
	// sockets and accepts connections but answers nothing, as a hung
	// service does, until SIGCONT when the fault ends.
	FaultFreeze FaultKind = "freeze"
)

// FaultKinds are the kinds, in a stable order (a seeded schedule picks
// from it).
var FaultKinds = []FaultKind{FaultRestart, FaultKill, FaultFreeze}

// MaxFaultDuration bounds a fault: nothing may leave a service down longer.
const MaxFaultDuration = 10 * time.Minute

// stopGrace is how long a FaultRestart waits after SIGTERM before SIGKILL.
const stopGrace = 20 * time.Second

// Fault is one injected failure: Kind on Service (its name in
// hack/realcloud: pids/NAME), lasting For.
type Fault struct {
	Kind    FaultKind
	Service string
	For     time.Duration
}

func (f Fault) String() string { return fmt.Sprintf("%s %s for %s", f.Kind, f.Service, f.For) }

// Validate says what is wrong with f, if anything.
func (f Fault) Validate() error {
	var errs []error
	if !slices.Contains(FaultKinds, f.Kind) {
		errs = append(errs, fmt.Errorf("fault kind %q is none of %v", f.Kind, FaultKinds))
	}
	if f.Service == "" {
		errs = append(errs, errors.New("fault names no service"))
	}
	if f.For <= 0 || f.For > MaxFaultDuration {
		errs = append(errs, fmt.Errorf("fault duration %s is not in (0, %s]", f.For, MaxFaultDuration))
	}
	return errors.Join(errs...)
}

// processGroups is what a fault acts on: the process groups hack/realcloud
// started, one per service. The real one is realCloudProcesses; unit tests
// use a fake.
type processGroups interface {
	// signal sends sig to the service's whole process group.
	signal(service string, sig syscall.Signal) error
	// stop ends the service's process group: SIGTERM, then SIGKILL after
	// grace; it returns once no process of the group is left.
	stop(service string, grace time.Duration) error
	// kill SIGKILLs the group and returns once no process of it is left.
	kill(service string) error
	// respawn starts the service again as the bring-up did.
	respawn(service string) error
}

// ActiveFault is a fault in progress. It ends by itself after its
// duration; End ends it sooner (both at most once).
type ActiveFault struct {
	Fault
	Started time.Time

	once  sync.Once
	done  chan struct{}
	mu    sync.Mutex // guards timer: it may fire before injectFault stores it
	timer interface{ Stop() bool }
	end   func() error
	ended time.Time
	err   error
}

// afterFunc is time.AfterFunc, replaceable in unit tests.
type afterFunc func(d time.Duration, f func()) interface{ Stop() bool }

func realAfterFunc(d time.Duration, f func()) interface{ Stop() bool } { return time.AfterFunc(d, f) }

// injectFault hits f.Service now and arranges for the fault to end after
// f.For. An error means the fault could not be injected (nothing to undo:
// a failed stop or kill leaves the service as it was or respawns it).
func injectFault(p processGroups, f Fault, after afterFunc, now func() time.Time) (*ActiveFault, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	a := &ActiveFault{Fault: f, done: make(chan struct{})}
	switch f.Kind {
	case FaultRestart:
		if err := p.stop(f.Service, stopGrace); err != nil {
			return nil, fmt.Errorf("%s: %w", f, errors.Join(err, p.respawn(f.Service)))
		}
		a.end = func() error { return p.respawn(f.Service) }
	case FaultKill:
		if err := p.kill(f.Service); err != nil {
			return nil, fmt.Errorf("%s: %w", f, errors.Join(err, p.respawn(f.Service)))
		}
		a.end = func() error { return p.respawn(f.Service) }
	case FaultFreeze:
		if err := p.signal(f.Service, syscall.SIGSTOP); err != nil {
			// A group partly stopped must not stay so.
			return nil, fmt.Errorf("%s: %w", f, errors.Join(err, p.signal(f.Service, syscall.SIGCONT)))
		}
		a.end = func() error { return p.signal(f.Service, syscall.SIGCONT) }
	}
	a.Started = now()
	end := a.end
	a.end = func() error {
		err := end()
		a.ended = now()
		return err
	}
	a.mu.Lock()
	a.timer = after(f.For, func() { _ = a.End() })
	a.mu.Unlock()
	return a, nil
}

// End ends the fault now if it has not ended yet, and returns how ending
// it went (the same error on every call).
func (a *ActiveFault) End() error {
	a.once.Do(func() {
		a.mu.Lock()
		if a.timer != nil {
			a.timer.Stop()
		}
		a.mu.Unlock()
		a.err = a.end()
		if a.err != nil {
			a.err = fmt.Errorf("end %s: %w", a.Fault, a.err)
		}
		close(a.done)
	})
	<-a.done
	return a.err
}

// Done is closed once the fault has ended.
func (a *ActiveFault) Done() <-chan struct{} { return a.done }

// Ended is when the service was given back (zero while the fault lasts).
func (a *ActiveFault) Ended() time.Time {
	select {
	case <-a.done:
		return a.ended
	default:
		return time.Time{}
	}
}
