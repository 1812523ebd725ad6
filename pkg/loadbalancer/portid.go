package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/stackward/stackward/pkg/openstack"
)

// A Service's port-id (AnnotationPortID) puts the VIP on an existing
// Neutron port, which the floating IP then follows and which Stackward
// releases the floating IP from when the Service goes. A port in use is
// not the Service's to take: on a node's port, the node would lose its
// floating IP. Octavia (Zed) refuses a port with a device_id, but not
// another load balancer's OVN VIP port (it has no device), nor another
// project's port read with admin credentials; and its 400 comes after
// Stackward committed to the create. So before a load balancer is created
// on the port, Stackward reads it and refuses it unless it is free and the
// project's, or this load balancer's own: an InvalidAnnotationError, one
// Warning Event on the Service, and nothing created.

// octaviaOwner is the device_owner of the VIP ports Octavia's network
// driver creates (their device_id is "lb-<load balancer ID>").
const octaviaOwner = "Octavia"

// ovnVIPPortPrefix names the VIP ports ovn-octavia-provider creates
// ("ovn-lb-vip-<load balancer ID>"); they carry no device_id.
const ovnVIPPortPrefix = "ovn-lb-vip-"

// checkVIPPort refuses a port-id that is not the Service's to use, when a
// load balancer is about to be created on it: there is none yet (lb nil),
// or the one there is in ERROR and is recreated (recreate.go). An existing
// load balancer keeps its VIP port: the same port is its own, another one
// is refused as immutable (checkImmutable), neither needs a read.
func (m *Manager) checkVIPPort(ctx context.Context, o *options, lb *LoadBalancer) error {
	if o.portID == "" || (lb != nil && (lb.ProvisioningStatus != StatusError || lb.VIPPortID == o.portID)) {
		return nil
	}
	p, err := m.Neutron.Port(ctx, o.portID)
	if errors.Is(err, openstack.ErrNotFound) {
		return &InvalidAnnotationError{Annotation: AnnotationPortID, Value: o.portID, Reason: "no such port"}
	}
	if err != nil {
		return fmt.Errorf("read the VIP port %s (%s): %w", o.portID, AnnotationPortID, err)
	}
	refuse := func(reason string) error {
		return &InvalidAnnotationError{Annotation: AnnotationPortID, Value: o.portID,
			Reason: reason + "; name a free port of the project, or none"}
	}
	for _, check := range vipPortChecks {
		if reason := check(p, m.ProjectID, lb); reason != "" {
			return refuse(reason)
		}
	}
	// An amphora load balancer on a port the user brought leaves it
	// without a device: only Octavia knows it is taken, and another
	// Service's floating IP on it would become this one's address.
	on, err := m.Octavia.LoadBalancersOnPort(ctx, o.portID)
	if err != nil {
		return fmt.Errorf("load balancers on the VIP port %s (%s): %w", o.portID, AnnotationPortID, err)
	}
	for _, other := range on {
		if (lb == nil || other.ID != lb.ID) && other.ProvisioningStatus != StatusPendingDelete {
			return refuse(fmt.Sprintf("the port is the VIP port of load balancer %s (%s)", other.Name, other.ID))
		}
	}
	return nil
}

// vipPortChecks are the reasons, in order, to refuse a port for the VIP
// of lb (nil before its first create) in project ("" when the credentials
// name none); each returns "" when it does not apply.
var vipPortChecks = []func(p *Port, project string, lb *LoadBalancer) string{
	portOfAnotherProject,
	portInUse,
	anotherOVNVIPPort,
}

func portOfAnotherProject(p *Port, project string, _ *LoadBalancer) string {
	if project == "" || p.ProjectID == project {
		return ""
	}
	return fmt.Sprintf("the port belongs to project %s, not to this cluster's project %s", p.ProjectID, project)
}

// portInUse refuses a port with a device (a server, a router, another
// load balancer), except the VIP port Octavia made for lb itself.
func portInUse(p *Port, _ string, lb *LoadBalancer) string {
	if p.DeviceID == "" && p.DeviceOwner == "" {
		return ""
	}
	if lb != nil && p.DeviceOwner == octaviaOwner && p.DeviceID == "lb-"+lb.ID {
		return ""
	}
	return fmt.Sprintf("the port is already used by device %q (device_owner %q)", p.DeviceID, p.DeviceOwner)
}

func anotherOVNVIPPort(p *Port, _ string, lb *LoadBalancer) string {
	owner, ok := strings.CutPrefix(p.Name, ovnVIPPortPrefix)
	if !ok || (lb != nil && owner == lb.ID) {
		return ""
	}
	return fmt.Sprintf("the port is the VIP port of load balancer %s (%s)", owner, p.Name)
}
