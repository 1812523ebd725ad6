// Package soak runs the lab for a long time under a seeded random schedule
// of cloud faults, failovers and churn, checks Stackward's invariants
// continuously, and writes a JSON report and an SVG plot (soak_test.go
// drives it; this file and svg.go are the report, testable without a lab).
package soak

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"time"
)

// Fault is one injected fault or disturbance.
type Fault struct {
	At     float64 `json:"atSeconds"`
	Until  float64 `json:"untilSeconds"`
	Kind   string  `json:"kind"`
	Detail string  `json:"detail"`
}

// Sample is one periodic observation.
type Sample struct {
	At float64 `json:"atSeconds"`
	// LagSeconds is the age of the oldest object not yet converged (a Node
	// up but not initialized and Ready, a Service without its address).
	LagSeconds  float64 `json:"lagSeconds"`
	Unconverged int     `json:"unconverged"`
	RSSMiB      float64 `json:"rssMiB"`
	HeapMiB     float64 `json:"heapMiB"`
}

// Invariants are the counts that must be zero.
type Invariants struct {
	WrongfulNodeDeletions int `json:"wrongfulNodeDeletions"`
	WrongApprovals        int `json:"wrongApprovals"`
	OrphanLoadBalancers   int `json:"orphanLoadBalancers"`
	OrphanFloatingIPs     int `json:"orphanFloatingIPs"`
	OrphanPorts           int `json:"orphanPorts"`
	OtherResourcesChanged int `json:"otherResourcesChanged"`
}

// Report is the soak's JSON summary.
type Report struct {
	Seed            int64          `json:"seed"`
	DurationSeconds float64        `json:"durationSeconds"`
	Nodes           int            `json:"nodes"`
	Services        int            `json:"services"`
	FaultsByKind    map[string]int `json:"faultsByKind"`
	Counts          map[string]int `json:"counts"`
	Invariants      Invariants     `json:"invariants"`
	Violations      []string       `json:"violations,omitempty"`
	// ConvergenceSeconds is how long after the last fault every Node and
	// Service had converged.
	ConvergenceSeconds float64 `json:"convergenceSeconds"`
	// LagP99Seconds is the 99th percentile of the sampled convergence lag
	// over the whole run, faults included.
	LagP99Seconds float64  `json:"lagP99Seconds"`
	RSSStartMiB   float64  `json:"rssStartMiB"`
	RSSEndMiB     float64  `json:"rssEndMiB"`
	RSSMaxMiB     float64  `json:"rssMaxMiB"`
	HeapStartMiB  float64  `json:"heapStartMiB"`
	HeapEndMiB    float64  `json:"heapEndMiB"`
	RSSNote       string   `json:"rssNote"`
	Faults        []Fault  `json:"faults"`
	Samples       []Sample `json:"samples"`
}

// Summarize fills the figures derived from the samples and faults.
func (r *Report) Summarize() {
	r.FaultsByKind = map[string]int{}
	for _, f := range r.Faults {
		r.FaultsByKind[f.Kind]++
	}
	if len(r.Samples) == 0 {
		return
	}
	lags := make([]float64, 0, len(r.Samples))
	for _, s := range r.Samples {
		lags = append(lags, s.LagSeconds)
		r.RSSMaxMiB = math.Max(r.RSSMaxMiB, s.RSSMiB)
	}
	slices.Sort(lags)
	r.LagP99Seconds = lags[int(math.Ceil(0.99*float64(len(lags))))-1]
	// The first samples are the lab starting up; "start" is after it.
	first := r.Samples[min(len(r.Samples)-1, len(r.Samples)/10)]
	last := r.Samples[len(r.Samples)-1]
	r.RSSStartMiB, r.RSSEndMiB = first.RSSMiB, last.RSSMiB
	r.HeapStartMiB, r.HeapEndMiB = first.HeapMiB, last.HeapMiB
}

// Write stores the report as JSON and the plot as SVG next to it.
func (r *Report) Write(jsonPath, svgPath string, d time.Duration) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(jsonPath, b, 0o644); err != nil {
		return err
	}
	return os.WriteFile(svgPath, []byte(Plot(r, d)), 0o644)
}
