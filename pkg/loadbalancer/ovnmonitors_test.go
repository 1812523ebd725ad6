package loadbalancer

import (
	"slices"
	"testing"
)

// The order of a plan on the OVN provider: the monitors a listener create
// would trip over go first, monitor creates of that protocol last.
func TestMonitorsGoBeforeAListenerCreateOnOVN(t *testing.T) {
	monitor := &Monitor{ID: "hm80", MonitorSpec: MonitorSpec{Name: "monitor_tcp_80", Type: "TCP", Delay: 5, Timeout: 3, MaxRetries: 2}}
	udpMonitor := &Monitor{ID: "hm53", MonitorSpec: MonitorSpec{Name: "monitor_udp_53", Type: "UDP-CONNECT", Delay: 5, Timeout: 3, MaxRetries: 2}}
	tree := &Tree{
		Listeners: []Listener{{ID: "l80", Protocol: "TCP", Port: 80, DefaultPoolID: "p80", ConnLimit: -1}, {ID: "l53", Protocol: "UDP", Port: 53, DefaultPoolID: "p53", ConnLimit: -1}},
		Pools: map[string]*Pool{
			"p80": {ID: "p80", Protocol: "TCP", Monitor: monitor},
			"p53": {ID: "p53", Protocol: "UDP", Monitor: udpMonitor},
		},
	}
	listener := func(protocol string, port int) ListenerSpec {
		return ListenerSpec{Protocol: protocol, Port: port, ConnLimit: -1,
			Pool: PoolSpec{Protocol: protocol, Monitor: &MonitorSpec{Type: "TCP", Delay: 5, Timeout: 3, MaxRetries: 2}}}
	}
	have := []ListenerSpec{listener("TCP", 80), listener("UDP", 53)}
	have[1].Pool.Monitor.Type = "UDP-CONNECT"
	for _, tc := range []struct {
		name     string
		provider string
		add      ListenerSpec
		want     []string
	}{
		{name: "ovn, a TCP port added: the TCP monitor is deleted first, the UDP one stays", provider: ProviderOVN, add: listener("TCP", 443),
			want: []string{"delete health monitor monitor_tcp_80 (hm80) of pool p80 before a TCP listener is created", "create listener TCP/443", "create pool of listener TCP/443", "create monitor of listener TCP/443"}},
		{name: "ovn, a UDP port added: the UDP monitor is deleted first, the TCP one stays", provider: ProviderOVN, add: listener("UDP", 5353),
			want: []string{"delete health monitor monitor_udp_53 (hm53) of pool p53 before a UDP listener is created", "create listener UDP/5353", "create pool of listener UDP/5353", "create monitor of listener UDP/5353"}},
		{name: "amphora, a TCP port added: no monitor is touched", provider: "amphora", add: listener("TCP", 443),
			want: []string{"create listener TCP/443", "create pool of listener TCP/443", "create monitor of listener TCP/443"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{Provider: tc.provider, Listeners: append(slices.Clone(have), tc.add)}
			m := &Manager{}
			var got []string
			steps, err := m.guardMonitors("lb", tc.provider, tree, plan("lb", tree, spec))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range steps {
				got = append(got, s.What)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("plan\n %q\nwant\n %q", got, tc.want)
			}
		})
	}

	t.Run("ovn, the monitor gone and the listener not yet created: the monitor's re-create waits for the listener", func(t *testing.T) {
		bare := &Tree{Listeners: tree.Listeners, Pools: map[string]*Pool{"p80": {ID: "p80", Protocol: "TCP"}, "p53": tree.Pools["p53"]}}
		spec := Spec{Provider: ProviderOVN, Listeners: append(slices.Clone(have), listener("TCP", 443))}
		var got []string
		steps, err := (&Manager{}).guardMonitors("lb", ProviderOVN, bare, plan("lb", bare, spec))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range steps {
			got = append(got, s.What)
		}
		want := []string{"create listener TCP/443", "create pool of listener TCP/443", "create monitor of listener TCP/80", "create monitor of listener TCP/443"}
		if !slices.Equal(got, want) {
			t.Errorf("plan\n %q\nwant\n %q", got, want)
		}
	})
}
