package soak

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"
)

func TestReportAndPlot(t *testing.T) {
	r := &Report{Seed: 42, Nodes: 3, Services: 5,
		Faults: []Fault{{At: 1, Until: 4, Kind: "network 503", Detail: "a <fault>"}, {At: 5, Until: 5, Kind: "ccm failover"}, {At: 6, Until: 9, Kind: "network 503"}}}
	for i := range 100 {
		r.Samples = append(r.Samples, Sample{At: float64(i) / 10, LagSeconds: float64(i % 10), RSSMiB: 100 + float64(i), HeapMiB: 50})
	}
	r.Summarize()
	if r.FaultsByKind["network 503"] != 2 || r.FaultsByKind["ccm failover"] != 1 {
		t.Errorf("faults by kind %v", r.FaultsByKind)
	}
	if r.LagP99Seconds != 9 || r.RSSStartMiB != 110 || r.RSSEndMiB != 199 || r.RSSMaxMiB != 199 {
		t.Errorf("p99 %v rss start %v end %v max %v", r.LagP99Seconds, r.RSSStartMiB, r.RSSEndMiB, r.RSSMaxMiB)
	}
	svg := Plot(r, 10*time.Second)
	// Well-formed XML with a bar per fault and a line per series.
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := dec.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("SVG is not well-formed: %v", err)
			}
			break
		}
	}
	if n := strings.Count(svg, "<title>"); n != 3 {
		t.Errorf("%d fault bars, want 3", n)
	}
	if n := strings.Count(svg, "<polyline"); n != 4 {
		t.Errorf("%d lines, want 4", n)
	}
	if !strings.Contains(svg, "a &lt;fault&gt;") {
		t.Error("fault detail not escaped")
	}
}
