package routes

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/openstack"
)

// ours is the pair this cluster writes for a route: the destination with
// the port's own MAC (what Neutron fills in when a pair has none). A pair
// of the same CIDR with another MAC (keepalived, VRRP) is someone else's.
func ours(p *Port, cidr string) func(Pair) bool {
	return func(x Pair) bool { return x.IPAddress == cidr && (x.MACAddress == "" || x.MACAddress == p.MACAddress) }
}

// changePair adds or removes the record's destination in the allowed
// address pairs of the record's port, compare-and-swap, and says whether
// it changed anything. Removing from a port that is gone, or that no
// longer belongs to the record's server with the next hop address (a new
// server got the address), changes nothing.
func (r *Routes) changePair(ctx context.Context, rec Record, add bool) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	logger := klog.FromContext(ctx)
	var err error
	for range casAttempts {
		var port *Port
		port, err = r.net.Port(ctx, rec.PortID)
		if openstack.IsNotFound(err) && !add {
			return false, nil // the server went, and its port with it
		}
		if err != nil {
			return false, fmt.Errorf("port %s of node %s: %w", rec.PortID, rec.Node, err)
		}
		if port.DeviceID != rec.ServerID || !port.HasFixedIP(rec.NextHop) {
			if add {
				return false, fmt.Errorf("port %s no longer belongs to server %s with address %s: %w", rec.PortID, rec.ServerID, rec.NextHop, ErrNoPort)
			}
			logger.Info("Port now belongs to another server; leaving its address pairs alone", "port", rec.PortID, "server", rec.ServerID, "device", port.DeviceID, "destination", rec.Destination)
			return false, nil
		}
		has := slices.ContainsFunc(port.AllowedAddressPairs, ours(port, rec.Destination))
		if has == add {
			return false, nil
		}
		pairs := slices.Clone(port.AllowedAddressPairs)
		if add {
			pairs = append(pairs, Pair{IPAddress: rec.Destination, MACAddress: port.MACAddress})
		} else {
			pairs = slices.DeleteFunc(pairs, ours(port, rec.Destination))
		}
		err = r.net.SetAllowedAddressPairs(ctx, port.ID, pairs, port.RevisionNumber)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, ErrConflict) {
			return false, fmt.Errorf("allowed address pairs of port %s: %w", port.ID, err)
		}
		logger.V(2).Info("Port changed under us; reading it again", "port", port.ID, "revision", port.RevisionNumber)
	}
	return false, fmt.Errorf("allowed address pairs of port %s: gave up after %d attempts: %w", rec.PortID, casAttempts, err)
}
