package cloudsim

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// FaultRule injects failures into matching API calls, so that tests can
// check how clients behave when the cloud is slow, down or rate limiting.
type FaultRule struct {
	// Service is a catalog service type ("compute", "network",
	// "load-balancer", "identity") or "*" for all.
	Service string `json:"service"`
	// Operation is a counter operation name ("servers.detail",
	// "ports.list"...) or "*"/"" for every operation of the service. The
	// load-balancer operation "provisioning" makes Octavia objects end in
	// provisioning_status ERROR instead of ACTIVE, or, with Hang, stay
	// PENDING_* (a stuck amphora): for ever, or for HangFor.
	Operation string `json:"operation,omitempty"`
	// Status is the HTTP status to answer with (500, 503, 429...); 0 means
	// no error, only Latency or Hang.
	Status int `json:"status,omitempty"`
	// RetryAfter is sent as Retry-After (seconds) with the error.
	RetryAfter time.Duration `json:"retryAfter,omitempty"`
	// ErrorRate is the fraction of matching calls that fail, in (0,1];
	// 0 means every matching call fails.
	ErrorRate float64 `json:"errorRate,omitempty"`
	// Latency is added to matching calls.
	Latency time.Duration `json:"latency,omitempty"`
	// Hang holds matching calls until the client gives up (or the
	// simulator is closed).
	Hang bool `json:"hang,omitempty"`
	// HangFor bounds a Hang on the "provisioning" operation: the change
	// stays PENDING_* this long and then ends, as Octavia's controller ends
	// it after its retry timeout when an amphora is lost: in ERROR when
	// Status is set, in ACTIVE otherwise. 0 keeps it PENDING_* for ever.
	// Only valid with Hang on the "provisioning" operation.
	HangFor time.Duration `json:"hangFor,omitempty"`
	// Times limits the rule to that many triggered calls; 0 is unlimited.
	Times int `json:"times,omitempty"`
	// Drop closes the connection without any answer, as a service process
	// that is killed or restarted under a request does (measured on the
	// real lane: clients see EOF or a reset, never an HTTP status). It
	// wins over Status. Go's transport sends an idempotent request again,
	// once, on a reused connection closed unanswered (Times 1 hides it).
	Drop bool `json:"drop,omitempty"`
	// NoRequestID answers the error as something in front of the service
	// would (a proxy or load balancer): without X-Openstack-Request-Id and
	// with a plain-text body instead of the service's JSON error.
	NoRequestID bool `json:"noRequestID,omitempty"`
}

type faultState struct {
	rule FaultRule
	used int
}

func (f FaultRule) matches(service, operation string) bool {
	if f.Service != "*" && f.Service != service {
		return false
	}
	return f.Operation == "" || f.Operation == "*" || f.Operation == operation
}

// SetFault adds a fault rule; rules accumulate until ClearFaults.
func (s *Sim) SetFault(rule FaultRule) error {
	if rule.Service == "" {
		return fmt.Errorf("fault rule needs a service: %w", ErrInvalid)
	}
	if rule.ErrorRate < 0 || rule.ErrorRate > 1 {
		return fmt.Errorf("fault error rate %v is not in [0,1]: %w", rule.ErrorRate, ErrInvalid)
	}
	if rule.Status != 0 && (rule.Status < 400 || rule.Status > 599) {
		return fmt.Errorf("fault status %d is not an HTTP error: %w", rule.Status, ErrInvalid)
	}
	if rule.HangFor < 0 || (rule.HangFor > 0 && (!rule.Hang || rule.Operation != "provisioning")) {
		return fmt.Errorf("fault hangFor %s needs hang on the provisioning operation and a positive duration: %w", rule.HangFor, ErrInvalid)
	}
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	s.faults = append(s.faults, &faultState{rule: rule})
	return nil
}

// ClearFaults removes every fault rule (not the global latency).
func (s *Sim) ClearFaults() {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	s.faults = nil
}

// FaultUses returns how many times each active rule has fired, in the
// order of Faults.
func (s *Sim) FaultUses() []int {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	out := make([]int, 0, len(s.faults))
	for _, f := range s.faults {
		out = append(out, f.used)
	}
	return out
}

// Faults returns the active fault rules.
func (s *Sim) Faults() []FaultRule {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	out := make([]FaultRule, 0, len(s.faults))
	for _, f := range s.faults {
		out = append(out, f.rule)
	}
	return out
}

// trigger reports whether a matching rule fires for this call, consuming
// one of its Times, and returns the latency, hang and status to apply.
func (s *Sim) trigger(service, operation string) (latency time.Duration, hang, drop bool, status int, retryAfter time.Duration, proxy bool) {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	latency = s.latency
	for _, f := range s.faults {
		r := f.rule
		if !r.matches(service, operation) || (r.Times > 0 && f.used >= r.Times) {
			continue
		}
		if r.ErrorRate > 0 && s.rng.Float64() >= r.ErrorRate {
			continue
		}
		f.used++
		latency += r.Latency
		if r.Hang {
			hang = true
		}
		if r.Drop {
			drop = true
		}
		if r.Status != 0 && status == 0 {
			status, retryAfter, proxy = r.Status, r.RetryAfter, r.NoRequestID
		}
	}
	return latency, hang, drop, status, retryAfter, proxy
}

// provisioningFault reports how a settling Octavia change ends: in ERROR
// (fail), or not now (hang: it stays PENDING_*, for ever when hangFor is 0,
// else for hangFor and then it ends in ERROR when fail).
func (s *Sim) provisioningFault() (fail, hang bool, hangFor time.Duration) {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	for _, f := range s.faults {
		r := f.rule
		if r.Operation != "provisioning" || !(r.Service == ServiceLoadBalancer || r.Service == "*") ||
			(r.Times > 0 && f.used >= r.Times) {
			continue
		}
		if r.ErrorRate > 0 && s.rng.Float64() >= r.ErrorRate {
			continue
		}
		f.used++
		if r.Hang {
			return r.HangFor > 0 && r.Status != 0, true, r.HangFor
		}
		return true, false, 0
	}
	return false, false, 0
}

// applyFaults delays, hangs or fails a request; false means it was answered.
func (s *Sim) applyFaults(w http.ResponseWriter, r *http.Request, o op) bool {
	latency, hang, drop, status, retryAfter, proxy := s.trigger(o.service, o.name)
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return false
		case <-s.hangCtx.Done():
			t.Stop()
		}
	}
	if hang {
		select {
		case <-r.Context().Done():
		case <-s.hangCtx.Done():
		}
		serviceError(w, o.service, http.StatusServiceUnavailable, "", "the simulator was stopped while the request hung")
		return false
	}
	if drop {
		if rec, ok := w.(*statusRecorder); ok {
			rec.dropped = true
		}
		// net/http closes the connection without a response or a log line.
		panic(http.ErrAbortHandler)
	}
	if status != 0 {
		if retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((retryAfter+time.Second-1)/time.Second)))
		}
		if proxy {
			w.Header().Del("X-Openstack-Request-Id")
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(status)
			_, _ = fmt.Fprintf(w, "%d %s\n", status, http.StatusText(status))
			return false
		}
		serviceError(w, o.service, status, "", fmt.Sprintf("injected fault: %s %s", o.service, o.name))
		return false
	}
	return true
}

// RevokeTokens invalidates every issued token; clients must re-authenticate.
func (s *Sim) RevokeTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state.tokens = map[string]*token{}
}

// SetPassword changes a user's password (by name) and revokes the tokens
// issued to that user, as Keystone does: a client must authenticate with
// the new password, and the old one is refused.
func (s *Sim) SetPassword(userName, password string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.state.users.all() {
		if u.Name != userName {
			continue
		}
		u.Password = password
		for id, t := range s.state.tokens {
			if t.User == u {
				delete(s.state.tokens, id)
			}
		}
		return nil
	}
	return fmt.Errorf("no user %q", userName)
}
