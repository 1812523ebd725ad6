package config

import (
	"strings"
	"testing"
)

func TestAdoptingUpstreamLoadBalancersIsOnUnlessTurnedOff(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		want       bool
	}{
		{"without the key the upstream CCM's load balancers are adopted", minimalGlobal, true},
		{"adopt-upstream-load-balancers = false turns adoption off", minimalGlobal + "[LoadBalancer]\nadopt-upstream-load-balancers = false\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, warnings, err := Read("cloud.conf", strings.NewReader(tc.conf))
			if err != nil || len(warnings) != 0 {
				t.Fatalf("Read: warnings %v, error %v", warnings, err)
			}
			if cfg.LoadBalancer.AdoptUpstream != tc.want {
				t.Errorf("AdoptUpstream = %v, want %v", cfg.LoadBalancer.AdoptUpstream, tc.want)
			}
		})
	}
}
