package bench

import (
	"strings"
	"testing"
)

func TestParseGoBenchReadsCustomMetrics(t *testing.T) {
	out := `goos: linux
BenchmarkServicesToActive/stackward-2         	       1	2213456789 ns/op	         6.000 octavia-calls/service	         2.213 s-to-all-active
BenchmarkServicesToActive/serial-2            	       1	100812345678 ns/op	        30.00 octavia-calls/service	       100.8 s-to-all-active
PASS
`
	got, err := ParseGoBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if v := got["BenchmarkServicesToActive/stackward"]["octavia-calls/service"]; v != 6 {
		t.Errorf("stackward octavia-calls/service = %v, want 6 (all: %v)", v, got)
	}
	if v := got["BenchmarkServicesToActive/serial"]["s-to-all-active"]; v != 100.8 {
		t.Errorf("serial s-to-all-active = %v, want 100.8", v)
	}
	if len(got) != 2 {
		t.Errorf("parsed %d benchmarks, want 2: %v", len(got), got)
	}
}
