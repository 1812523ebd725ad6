package approver

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/openstack"
)

// What may ever be certified, whatever the cloud says: which IPs,
// which instance states may be, and how names compare.

// notRunning are the Nova statuses in which no kubelet can be running on
// the instance: a request from it is left pending (not denied: the server
// may well be started again) until the instance runs. REBOOT, MIGRATING,
// RESIZE and the like are transient states of a running instance.
var notRunning = []string{"SHUTOFF", "SUSPENDED", "PAUSED", "SHELVED", "SHELVED_OFFLOADED", "ERROR"}

// forbiddenRanges are the configured ranges never put in a certificate.
// The control-plane endpoints are not among them: they are forbidden only
// as addresses no node owns (see controlPlaneEndpoint).
func (p Policy) forbiddenRanges() []nodeaddress.Range {
	var out []nodeaddress.Range
	for _, c := range p.ServiceCIDRs {
		out = append(out, nodeaddress.Range{Prefix: c.Masked(), What: "the Service CIDR"})
	}
	return out
}

// controlPlaneEndpoint reports whether ip is one of the configured
// control-plane endpoints. Those are meant to be addresses no node owns (a
// VIP, a load balancer's): certified for no node. A node's own address,
// verified against the cloud like any other (a kubeadm control-plane
// host's advertise address), is approved for that node even when listed,
// and the listing is reported as a misconfiguration.
func (p Policy) controlPlaneEndpoint(ip netip.Addr) bool {
	for _, e := range p.ControlPlaneEndpoints {
		if e.Unmap() == ip.Unmap() {
			return true
		}
	}
	return false
}

// beingDeleted says why a server is on its way out though its status may
// still read ACTIVE ("" when it is not): Nova's task_state while deleting.
func beingDeleted(srv *openstack.Server) string {
	switch srv.TaskState {
	case "deleting", "soft-deleting":
		return "task_state " + srv.TaskState
	}
	return ""
}

func (p Policy) trustOptions() nodeaddress.TrustOptions {
	return nodeaddress.TrustOptions{
		Options:        p.Addresses,
		ProjectID:      p.ProjectID,
		NetworkIDs:     slices.Clone(p.NetworkIDs),
		AllowAccessIPs: p.AllowAccessIPs,
		Forbidden:      p.forbiddenRanges(),
	}
}

// checkForbiddenIPs denies, before asking the cloud, an IP SAN that must
// never be in a kubelet serving certificate whatever the cloud says: the
// Service CIDRs (10.96.0.1 is the apiserver for every pod), loopback,
// link-local, multicast, unspecified. (A control-plane endpoint is checked
// after the cloud answered: it may be the requesting node's own address.)
func (e *Evaluator) checkForbiddenIPs(_ context.Context, r *request) (Decision, error) {
	ranges := e.policy.forbiddenRanges()
	for _, sanIP := range r.cr.IPAddresses {
		ip, ok := netip.AddrFromSlice(sanIP)
		if !ok {
			return deny(ReasonInvalidRequest, "IP SAN %v is not an IP address", sanIP)
		}
		if why, bad := nodeaddress.Forbidden(ip.Unmap(), ranges); bad {
			return deny(ReasonForbiddenIP, "IP SAN %s is never allowed in a kubelet serving certificate: %s", ip.Unmap(), why)
		}
	}
	return cont()
}

// nonASCII returns the first byte offset of a non-ASCII character, or -1.
func nonASCII(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return i
		}
	}
	return -1
}

func checkASCII(what, s string) (Decision, bool) {
	if i := nonASCII(s); i >= 0 {
		d, _ := deny(ReasonNonASCIIName, "%s %q has a non-ASCII character at byte %d; names are compared as ASCII only, so it cannot be verified", what, s, i)
		return d, true
	}
	return Decision{}, false
}

func describeNotRunning(status string) string {
	return fmt.Sprintf("status %s: no kubelet can be running on it", status)
}
