package soak

import (
	"reflect"
	"testing"
)

func TestRealFaultsAreSummedUpByKindAndService(t *testing.T) {
	got := summarizeRealFaults([]RealFault{
		{Kind: "kill", Service: "octavia-worker", HealthySeconds: 4, ConvergedSeconds: 30, CloudCalls: 10, CloudErrors: 1},
		{Kind: "kill", Service: "octavia-worker", HealthySeconds: 9, ConvergedSeconds: -1, CloudCalls: 5},
		{Kind: "freeze", Service: "keystone", HealthySeconds: 2, ConvergedSeconds: 0, CloudCalls: 3, CloudErrors: 3},
	})
	want := map[string]RealFaultSummary{
		"kill octavia-worker": {Injected: 2, MaxHealthySeconds: 9, MaxConvergedSeconds: 30, NotConverged: 1, CloudCalls: 15, CloudErrors: 1},
		"freeze keystone":     {Injected: 1, MaxHealthySeconds: 2, CloudCalls: 3, CloudErrors: 3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if summarizeRealFaults(nil) != nil {
		t.Error("no faults, a summary")
	}
}
