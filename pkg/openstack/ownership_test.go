package openstack_test

import (
	"slices"
	"testing"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/openstack"
)

func TestOwnershipAnswersWithTheServersPortsFloatingIPsAndNetworks(t *testing.T) {
	sim, authURL := startSim(t)
	c := simClients(t, demoGlobal(authURL))
	ctx := simCtx(t)
	want, ok := sim.ServerByName("node-1")
	if !ok {
		t.Fatal("the simulator has no node-1")
	}
	if c.ProjectID == "" || c.ProjectID != want.ProjectID {
		t.Fatalf("Clients.ProjectID = %q, want the token's project %q (the server's)", c.ProjectID, want.ProjectID)
	}

	ports, err := c.Ownership.ServerPorts(ctx, want.ID, c.ProjectID)
	if err != nil {
		t.Fatal(err)
	}
	var portIDs, fixed, networkIDs []string
	for _, p := range ports {
		if p.DeviceID != want.ID || p.ProjectID != want.ProjectID {
			t.Errorf("port %s has device %q project %q, want %s of %s", p.ID, p.DeviceID, p.ProjectID, want.ID, want.ProjectID)
		}
		// A NIC of a running server is up; the approver trusts nothing
		// else (nodeaddress.Trusted). Its binding host is admin-only in
		// Neutron's default policy, so a member's token is not shown it.
		if p.Status != openstack.PortStatusActive || p.BindingHostKnown {
			t.Errorf("port %s: status %q, binding host %q (shown %v); want ACTIVE, binding host not shown to a member", p.ID, p.Status, p.BindingHostID, p.BindingHostKnown)
		}
		portIDs = append(portIDs, p.ID)
		networkIDs = append(networkIDs, p.NetworkID)
		for _, ip := range p.FixedIPs {
			fixed = append(fixed, ip.IPAddress)
		}
	}
	slices.Sort(portIDs)
	wantPorts := slices.Sorted(slices.Values(want.PortIDs))
	if !slices.Equal(portIDs, wantPorts) {
		t.Errorf("ports %v, simulator says %v", portIDs, wantPorts)
	}
	if !slices.Contains(fixed, "10.0.0.11") {
		t.Errorf("fixed IPs %v do not include 10.0.0.11", fixed)
	}

	other, err := c.Ownership.ServerPorts(ctx, want.ID, "another-project")
	if err != nil {
		t.Fatal(err)
	}
	if len(other) != 0 {
		t.Errorf("ports of the server filtered by another project: %+v, want none", other)
	}

	fips, err := c.Ownership.FloatingIPsOfPorts(ctx, portIDs)
	if err != nil {
		t.Fatal(err)
	}
	var wantFIP string
	for _, a := range want.Addresses {
		if a.Type == openstack.AddressFloating {
			wantFIP = a.IP
		}
	}
	if len(fips) != 1 || fips[0].Address != wantFIP || !slices.Contains(portIDs, fips[0].PortID) || fips[0].FixedIPAddress != "10.0.0.11" {
		t.Errorf("floating IPs %+v, want %s on one of %v for 10.0.0.11", fips, wantFIP, portIDs)
	}

	nets, err := c.Ownership.Networks(ctx, networkIDs)
	if err != nil {
		t.Fatal(err)
	}
	if len(nets) != 1 || nets[0].Name != "private" || nets[0].ID != networkIDs[0] || nets[0].External {
		t.Errorf("networks %+v, want the internal network private (%v)", nets, networkIDs)
	}

	t.Run("a Neutron failure is an error, never an empty answer", func(t *testing.T) {
		if err := sim.SetFault(cloudsim.FaultRule{Service: cloudsim.ServiceNetwork, Status: 500}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sim.ClearFaults)
		if got, err := c.Ownership.ServerPorts(ctx, want.ID, c.ProjectID); err == nil {
			t.Errorf("ServerPorts during a Neutron outage = %+v, nil; want an error", got)
		}
		if got, err := c.Ownership.FloatingIPsOfPorts(ctx, portIDs); err == nil {
			t.Errorf("FloatingIPsOfPorts during a Neutron outage = %+v, nil; want an error", got)
		}
	})
}
