package loadbalancer

import (
	"slices"
	"testing"
)

// The upstream CCM writes allowed_cidrs 0.0.0.0/0 (or ::/0) on every
// listener of a Service without source ranges; an adopted listener must
// not be rewritten for a restriction that restricts nothing, and must be
// when it really restricts.
func TestAListenerIsUpdatedOnlyWhenItsAllowedCIDRsRestrictSomething(t *testing.T) {
	for _, tc := range []struct {
		name       string
		have, want []string
		dualStack  bool
		update     bool
	}{
		{name: "upstream's 0.0.0.0/0 on an IPv4 load balancer is left as it is", have: []string{"0.0.0.0/0"}},
		{name: "upstream's ::/0 on an IPv6 load balancer is left as it is", have: []string{"::/0"}},
		{name: "both families' /0 on a dual-stack load balancer are left as they are", have: []string{"::/0", "0.0.0.0/0"}, dualStack: true},
		{name: "0.0.0.0/0 alone on a dual-stack load balancer is opened to IPv6 clients", have: []string{"0.0.0.0/0"}, dualStack: true, update: true},
		{name: "a listener open to everyone stays open", have: nil},
		{name: "a listener restricted to one network is opened", have: []string{"10.0.0.0/8"}, update: true},
		{name: "a /0 beside a narrower range is rewritten", have: []string{"0.0.0.0/0", "10.0.0.0/8"}, update: true},
		{name: "the Service's source ranges replace upstream's 0.0.0.0/0", have: []string{"0.0.0.0/0"}, want: []string{"203.0.113.0/24"}, update: true},
		{name: "the Service's source ranges already there are left", have: []string{"203.0.113.0/24"}, want: []string{"203.0.113.0/24"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := &Tree{Listeners: []Listener{{ID: "l1", Protocol: "TCP", Port: 80, AllowedCIDRs: tc.have, ConnLimit: -1}}}
			spec := Spec{Listeners: []ListenerSpec{{Protocol: "TCP", Port: 80, AllowedCIDRs: tc.want, ConnLimit: -1}}}
			if tc.dualStack {
				spec.AdditionalVIPs = []VIP{{SubnetID: "v6"}}
			}
			var whats []string
			for _, s := range plan("lb", tree, spec) {
				whats = append(whats, s.What)
			}
			if got := slices.Contains(whats, "update listener TCP/80"); got != tc.update {
				t.Errorf("plan %v: update of the listener %v, want %v", whats, got, tc.update)
			}
		})
	}
}
