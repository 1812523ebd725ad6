package openstack

import (
	"testing"
	"time"
)

func TestRefusedBackoff(t *testing.T) {
	tests := []struct {
		name      string
		refusals  int
		wantDelay time.Duration
	}{
		{"the first refusal waits five minutes", 1, 5 * time.Minute},
		{"the wait doubles with each refusal in a row", 3, 20 * time.Minute},
		{"the wait stops growing at an hour", 5, time.Hour},
		{"a refusal a day later still waits an hour, never less", 100, time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := refusedBackoff(tc.refusals); got != tc.wantDelay {
				t.Errorf("refusedBackoff(%d) = %v, want %v", tc.refusals, got, tc.wantDelay)
			}
		})
	}
}
