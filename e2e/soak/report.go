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
	// WrongDenials are serving certificates denied although the node's
	// server held every IP they name from before the request until the
	// denial: a cloud error must leave a request pending, never deny it.
	WrongDenials          int `json:"wrongDenials"`
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
	// RealFaults are the faults injected into the real cloud's services
	// (make soak-real), each with what it cost; RealFaultsByKind sums
	// them up by "kind service".
	RealFaults       []RealFault                 `json:"realFaults,omitempty"`
	RealFaultsByKind map[string]RealFaultSummary `json:"realFaultsByKind,omitempty"`
	// AdminActions are what the soak's OpenStack admin did on the real
	// cloud: a load balancer marked ERROR after stackward-ccm reported it
	// LoadBalancerStuck, the documented way out.
	AdminActions []AdminAction `json:"adminActions,omitempty"`
}

// AdminAction is one load balancer the soak's admin marked ERROR.
type AdminAction struct {
	At           float64 `json:"atSeconds"`
	Service      string  `json:"service"`
	LoadBalancer string  `json:"loadBalancer"`
	// Reported is the Warning that asked for it.
	Reported string `json:"reported"`
}

// RealFault is one fault on a real OpenStack service and what followed.
type RealFault struct {
	Kind    string  `json:"kind"`
	Service string  `json:"service"`
	At      float64 `json:"atSeconds"`
	// WindowSeconds is how long the service was down, stopped or frozen.
	WindowSeconds float64 `json:"windowSeconds"`
	// HealthySeconds is how long after the window every service answered
	// again (the cloud's own recovery, not Stackward's).
	HealthySeconds float64 `json:"healthySeconds"`
	// ConvergedSeconds is how long after the cloud was healthy every Node
	// and Service had converged; -1 when not within the bound.
	ConvergedSeconds float64 `json:"convergedSeconds"`
	// CloudCalls and CloudErrors are stackward-ccm's OpenStack requests
	// (attempts) and failed ones from the fault's start until the cloud
	// was healthy again.
	CloudCalls  int `json:"cloudCalls"`
	CloudErrors int `json:"cloudErrors"`
	// Failures are those failed requests by "service operation code" (an
	// HTTP status, or timeout, network...): the failure shapes the real
	// service showed.
	Failures map[string]int `json:"failures,omitempty"`
}

// RealFaultSummary is the faults of one kind on one service.
type RealFaultSummary struct {
	Injected            int     `json:"injected"`
	MaxHealthySeconds   float64 `json:"maxHealthySeconds"`
	MaxConvergedSeconds float64 `json:"maxConvergedSeconds"`
	NotConverged        int     `json:"notConverged"`
	CloudCalls          int     `json:"cloudCalls"`
	CloudErrors         int     `json:"cloudErrors"`
}

// summarizeRealFaults sums the real faults up by "kind service".
func summarizeRealFaults(faults []RealFault) map[string]RealFaultSummary {
	if len(faults) == 0 {
		return nil
	}
	out := map[string]RealFaultSummary{}
	for _, f := range faults {
		k := f.Kind + " " + f.Service
		sum := out[k]
		sum.Injected++
		sum.MaxHealthySeconds = math.Max(sum.MaxHealthySeconds, f.HealthySeconds)
		if f.ConvergedSeconds < 0 {
			sum.NotConverged++
		} else {
			sum.MaxConvergedSeconds = math.Max(sum.MaxConvergedSeconds, f.ConvergedSeconds)
		}
		sum.CloudCalls += f.CloudCalls
		sum.CloudErrors += f.CloudErrors
		out[k] = sum
	}
	return out
}

// Summarize fills the figures derived from the samples and faults.
func (r *Report) Summarize() {
	r.FaultsByKind = map[string]int{}
	for _, f := range r.Faults {
		r.FaultsByKind[f.Kind]++
	}
	r.RealFaultsByKind = summarizeRealFaults(r.RealFaults)
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
