package openstack_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/openstack"
)

// Neutron's answers through the one adapter keep their meaning: only a 404
// is "not found", a 412 is a lost compare-and-swap, and a create is never
// sent twice.
func TestSimNeutronAnswersKeepTheirMeaning(t *testing.T) {
	sim, authURL := startSim(t)
	c := simClients(t, demoGlobal(authURL))
	ctx := simCtx(t)
	servers := sim.Servers()
	ports, err := c.Neutron.ListPorts(ctx, servers[0].ID)
	if err != nil || len(ports) != 1 {
		t.Fatalf("ports of %s: %v, %v", servers[0].Name, ports, err)
	}
	port := ports[0]
	externals, err := c.Neutron.ExternalNetworks(ctx)
	if err != nil || len(externals) != 1 {
		t.Fatalf("external networks: %v, %v", externals, err)
	}

	tests := []struct {
		name  string
		fault *cloudsim.FaultRule
		call  func() error
		check func(t *testing.T, err error)
	}{
		{
			name: "a port that does not exist is not found, and still a 404",
			call: func() error { _, err := c.Neutron.Port(ctx, "no-such-port"); return err },
			check: func(t *testing.T, err error) {
				if !openstack.IsNotFound(err) || !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
					t.Errorf("err = %v, want not found and a 404", err)
				}
			},
		},
		{
			name:  "a port Neutron fails to read is an error, never not found",
			fault: &cloudsim.FaultRule{Service: cloudsim.ServiceNetwork, Operation: "ports.get", Status: 500},
			call:  func() error { _, err := c.Neutron.Port(ctx, port.ID); return err },
			check: func(t *testing.T, err error) {
				if err == nil || openstack.IsNotFound(err) {
					t.Errorf("err = %v, want an error that is not 'not found'", err)
				}
			},
		},
		{
			name: "a stale revision is a lost compare-and-swap and changes nothing",
			call: func() error {
				pairs := []openstack.AddressPair{{IPAddress: "198.19.130.0/24", MACAddress: port.MACAddress}}
				return c.Neutron.SetAllowedAddressPairs(ctx, port.ID, pairs, port.RevisionNumber-1)
			},
			check: func(t *testing.T, err error) {
				if !errors.Is(err, openstack.ErrConflict) {
					t.Errorf("err = %v, want ErrConflict", err)
				}
				now, gerr := c.Neutron.Port(ctx, port.ID)
				if gerr != nil || len(now.AllowedAddressPairs) != 0 || now.RevisionNumber != port.RevisionNumber {
					t.Errorf("port after a refused update: %+v, %v", now, gerr)
				}
			},
		},
		{
			name:  "a floating IP create answered 503 is sent once, not retried",
			fault: &cloudsim.FaultRule{Service: cloudsim.ServiceNetwork, Operation: "floatingips.create", Status: 503},
			call: func() error {
				_, err := c.Neutron.CreateFloatingIP(ctx, openstack.FloatingIP{NetworkID: externals[0], Description: "once"})
				return err
			},
			check: func(t *testing.T, err error) {
				if !gophercloud.ResponseCodeIs(err, http.StatusServiceUnavailable) {
					t.Errorf("err = %v, want the 503", err)
				}
				if n := sim.Calls()["network.floatingips.create"]; n != 1 {
					t.Errorf("creates sent: %d, want 1", n)
				}
			},
		},
		{
			name:  "a port read answered 503 is retried until Neutron answers",
			fault: &cloudsim.FaultRule{Service: cloudsim.ServiceNetwork, Operation: "ports.get", Status: 503, Times: 2},
			call:  func() error { _, err := c.Neutron.Port(ctx, port.ID); return err },
			check: func(t *testing.T, err error) {
				if err != nil || sim.Calls()["network.ports.get"] != 3 {
					t.Errorf("err = %v after %d reads, want success after 3", err, sim.Calls()["network.ports.get"])
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim.ResetCalls()
			if tt.fault != nil {
				if err := sim.SetFault(*tt.fault); err != nil {
					t.Fatal(err)
				}
			}
			err := tt.call()
			sim.ClearFaults()
			tt.check(t, err)
		})
	}
}
