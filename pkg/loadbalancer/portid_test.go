package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/stackward/stackward/pkg/openstack"
)

func (n *fakeNeutron) Port(_ context.Context, id string) (*Port, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, "get_port")
	if n.portErr != nil {
		return nil, n.portErr
	}
	p, ok := n.ports[id]
	if !ok {
		return nil, fmt.Errorf("port %s: %w", id, openstack.ErrNotFound)
	}
	out := *p
	return &out, nil
}

const testProject = "project-lab"

func TestAPortIDIsUsedOnlyWhenItIsFreeAndTheProjects(t *testing.T) {
	unavailable := gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusServiceUnavailable}
	tests := []struct {
		name    string
		port    *Port // nil: Neutron has no such port
		readErr error
		// refusal is what the InvalidAnnotationError says besides the
		// annotation and the port; "" means the port is taken.
		refusal string
		plain   bool // a plain error (requeue), not an invalid annotation
	}{
		{name: "a free port of the project is the VIP",
			port: &Port{ID: "port-free", ProjectID: testProject}},
		{name: "a node's port is refused, naming its server",
			port:    &Port{ID: "port-node", ProjectID: testProject, DeviceID: "server-node-1", DeviceOwner: "compute:nova"},
			refusal: `already used by device "server-node-1" (device_owner "compute:nova")`},
		{name: "another load balancer's VIP port is refused",
			port:    &Port{ID: "port-vip", ProjectID: testProject, DeviceID: "lb-other", DeviceOwner: "Octavia"},
			refusal: `already used by device "lb-other"`},
		{name: "another load balancer's OVN VIP port, which has no device, is refused",
			port:    &Port{ID: "port-ovn", Name: "ovn-lb-vip-other", ProjectID: testProject},
			refusal: "VIP port of load balancer other"},
		{name: "a router's port is refused",
			port:    &Port{ID: "port-router", ProjectID: testProject, DeviceID: "router-1", DeviceOwner: "network:router_interface"},
			refusal: `already used by device "router-1"`},
		{name: "a free port of another project is refused",
			port:    &Port{ID: "port-theirs", ProjectID: "project-other"},
			refusal: "belongs to project project-other"},
		{name: "a port that does not exist is an invalid annotation",
			port:    nil,
			refusal: "no such port"},
		{name: "a port that cannot be read is a plain error, not a missing port",
			port:    &Port{ID: "port-free", ProjectID: testProject},
			readErr: fmt.Errorf("get port port-free: %w", unavailable),
			plain:   true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oct, net := newFakeOctavia(), newFakeNeutron()
			m := newManager(oct, net)
			m.ProjectID = testProject
			id := "port-missing"
			if tc.port != nil {
				id = tc.port.ID
				net.ports = map[string]*Port{id: tc.port}
			}
			net.portErr = tc.readErr
			svc := service(func(s *corev1.Service) { s.Annotations[AnnotationPortID] = id })
			if tc.refusal == "" && !tc.plain {
				converge(t, m, oct, svc, nodes("10.0.0.1"))
				if l := oct.only(); l == nil || l.lb.VIPPortID != id {
					t.Fatalf("load balancer %+v, want its VIP on %s", l, id)
				}
				return
			}
			_, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
			var iae *InvalidAnnotationError
			switch {
			case tc.plain:
				if err == nil || errors.As(err, &iae) || errors.Is(err, openstack.ErrNotFound) || isRetry(err) {
					t.Errorf("Ensure: %v, want the read's error as it is", err)
				}
			case !errors.As(err, &iae) || iae.Annotation != AnnotationPortID || iae.Value != id || !strings.Contains(iae.Reason, tc.refusal):
				t.Errorf("Ensure: %v, want an InvalidAnnotationError on %s=%s saying %q", err, AnnotationPortID, id, tc.refusal)
			}
			if w := oct.writes(); len(w) != 0 || len(net.fips) != 0 {
				t.Errorf("Octavia writes %v, floating IPs %v: want nothing made", w, net.fips)
			}
		})
	}
}

func TestTheVIPPortOctaviaMadeForTheLoadBalancerIsItsOwn(t *testing.T) {
	lb := &LoadBalancer{ID: "lb-1"}
	for _, tc := range []struct {
		name string
		port Port
		lb   *LoadBalancer
		own  bool
	}{
		{"its amphora VIP port", Port{DeviceID: "lb-lb-1", DeviceOwner: "Octavia"}, lb, true},
		{"its OVN VIP port", Port{Name: "ovn-lb-vip-lb-1"}, lb, true},
		{"another load balancer's amphora VIP port", Port{DeviceID: "lb-lb-2", DeviceOwner: "Octavia"}, lb, false},
		{"an amphora VIP port before there is a load balancer", Port{DeviceID: "lb-lb-1", DeviceOwner: "Octavia"}, nil, false},
	} {
		var reasons []string
		for _, refuse := range vipPortChecks {
			if r := refuse(&tc.port, "", tc.lb); r != "" {
				reasons = append(reasons, r)
			}
		}
		if (len(reasons) == 0) != tc.own {
			t.Errorf("%s: refusals %q, want it own=%t", tc.name, reasons, tc.own)
		}
	}
}

func TestAnExistingLoadBalancerKeepsItsPortWithoutARead(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	net.ports = map[string]*Port{"port-mine": {ID: "port-mine"}}
	svc := service(func(s *corev1.Service) { s.Annotations[AnnotationPortID] = "port-mine" })
	converge(t, m, oct, svc, nodes("10.0.0.1"))
	net.calls = nil
	converge(t, m, oct, svc, nodes("10.0.0.1"))
	for _, c := range net.calls {
		if c == "get_port" {
			t.Errorf("the port of an existing load balancer was read again: %v", net.calls)
		}
	}
}

// An amphora load balancer on a port the user brought leaves the port
// without a device: a second Service (of any namespace) naming the same
// port is refused by what Octavia lists on it, before anything is made,
// so it can never report the first Service's floating IP as its own.
func TestAPortAnotherLoadBalancerHasAsItsVIPIsRefused(t *testing.T) {
	oct, net := newFakeOctavia(), newFakeNeutron()
	m := newManager(oct, net)
	m.ProjectID = testProject
	net.ports = map[string]*Port{"port-free": {ID: "port-free", ProjectID: testProject}}
	first := service(func(s *corev1.Service) { s.Annotations[AnnotationPortID] = "port-free" })
	st := converge(t, m, oct, first, nodes("10.0.0.1"))
	second := service(inNamespace("other"), func(s *corev1.Service) { s.Annotations[AnnotationPortID] = "port-free" })
	oct.resetCalls()
	fips := len(net.fips)
	_, err := m.Ensure(context.Background(), "lab", second, nodes("10.0.0.1"))
	var iae *InvalidAnnotationError
	if !errors.As(err, &iae) || iae.Annotation != AnnotationPortID || !strings.Contains(iae.Reason, "VIP port of load balancer") {
		t.Fatalf("Ensure of the second Service: %v, want a refusal naming %s and the load balancer", err, AnnotationPortID)
	}
	if w := oct.writes(); len(w) != 0 || len(net.fips) != fips || len(oct.lbs) != 1 {
		t.Errorf("writes %v, %d floating IPs, %d load balancers: want nothing made", w, len(net.fips), len(oct.lbs))
	}
	if got, _, err := m.Get(context.Background(), "lab", first); err != nil || got.Ingress[0].IP != st.Ingress[0].IP {
		t.Errorf("the first Service's address %v (%v), want %v still", got, err, st.Ingress)
	}
}
