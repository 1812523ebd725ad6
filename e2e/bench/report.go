// Package bench measures Stackward against the same simulator and a real
// apiserver, and writes the figures as one JSON report (`make bench`).
// Figures are counts and ratios (cloud calls per node, approvals per second,
// latency percentiles), never pass/fail timings: they are read, compared and
// kept, not asserted.
package bench

import (
	"encoding/json"
	"os"
	"slices"
	"sync"
	"time"
)

// Report is the JSON document `make bench` writes.
type Report struct {
	Generated string         `json:"generated"`
	Machine   map[string]any `json:"machine"`
	Results   map[string]any `json:"results"`

	mu   sync.Mutex
	path string
}

// NewReport starts a report that Save writes to path.
func NewReport(path string, machine map[string]any) *Report {
	return &Report{
		Generated: time.Now().UTC().Format(time.RFC3339),
		Machine:   machine,
		Results:   map[string]any{},
		path:      path,
	}
}

// Put records one benchmark's figures and saves the report, so a later
// failure does not lose what was measured.
func (r *Report) Put(name string, figures any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Results[name] = figures
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(r.path, append(data, '\n'), 0o644)
}

// Latencies summarizes durations in milliseconds.
type Latencies struct {
	Count int     `json:"count"`
	P50ms float64 `json:"p50_ms"`
	P90ms float64 `json:"p90_ms"`
	P99ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// Summarize computes percentiles (nearest rank) of ds.
func Summarize(ds []time.Duration) Latencies {
	if len(ds) == 0 {
		return Latencies{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) float64 {
		i := int(p*float64(len(s))+0.5) - 1
		i = max(0, min(i, len(s)-1))
		return ms(s[i])
	}
	return Latencies{Count: len(s), P50ms: at(0.50), P90ms: at(0.90), P99ms: at(0.99), MaxMs: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// PerUnit divides a count by n, for "calls per node".
func PerUnit(count, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(count) / float64(n)
}

// SumCalls adds the simulator's counters whose keys have one of prefixes.
func SumCalls(calls map[string]int, prefixes ...string) int {
	total := 0
	for k, v := range calls {
		for _, p := range prefixes {
			if len(k) >= len(p) && k[:len(p)] == p {
				total += v
				break
			}
		}
	}
	return total
}
