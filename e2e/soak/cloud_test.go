//go:build e2e

package soak

import (
	"net/http"
	"strings"

	"context"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
)

// The soak's own changes to servers and floating IPs, as a user makes
// them: on the simulator straight into its state (past its injected
// faults), on the real cloud through the APIs (the schedule makes them
// only between faults there).

func (s *soak) deleteServer(id string) {
	if s.sim != nil {
		if err := s.sim.Sim.DeleteServer(id); err != nil {
			s.t.Fatal(err)
		}
		return
	}
	s.cloud.DeleteServer(s.t, id)
}

func (s *soak) attachFloatingIP(serverID string) string {
	if s.sim != nil {
		ip, err := s.sim.Sim.AttachFloatingIP(serverID, framework.FloatingNetwork)
		if err != nil {
			s.t.Fatal(err)
		}
		return ip
	}
	return s.cloud.AttachFloatingIP(s.t, serverID)
}

func (s *soak) detachFloatingIP(serverID, ip string) {
	if s.sim != nil {
		if err := s.sim.Sim.DetachFloatingIP(serverID, ip); err != nil {
			s.t.Fatal(err)
		}
		return
	}
	s.cloud.DetachFloatingIP(s.t, serverID, ip)
}

// clearFaults ends every fault now.
func (s *soak) clearFaults() {
	if s.sim != nil {
		s.sim.Sim.ClearFaults()
		if s.downPorts {
			s.portsDown("ACTIVE")
		}
		return
	}
	s.real.end(s)
}

// waitActive waits until the load balancer is ACTIVE (the other
// cluster's, before the soak snapshots it).
func (s *soak) waitActive(id string) {
	err := wait.PollUntilContextTimeout(s.ctx, 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		lb, err := loadbalancers.Get(ctx, s.api.octavia, id).Extract()
		return err == nil && lb.ProvisioningStatus == "ACTIVE", nil
	})
	if err != nil {
		s.t.Fatalf("load balancer %s never ACTIVE: %v", id, err)
	}
}

// labNoopVIPPort: on the real cloud, Octavia's amphora provider with the
// lab's noop network driver never deallocates the VIP port its API
// allocated (realcloud.md, gotcha 12), a real deployment's network driver
// does. Such a port, named octavia-lb-<id> after a load balancer Octavia
// no longer has, is the lab's to clean up, not Stackward's.
func (s *soak) labNoopVIPPort(ctx context.Context, p ports.Port) bool {
	if s.real == nil {
		return false
	}
	id, ok := strings.CutPrefix(p.Name, "octavia-lb-")
	if !ok {
		return false
	}
	_, err := loadbalancers.Get(ctx, s.api.octavia, id).Extract()
	return gophercloud.ResponseCodeIs(err, http.StatusNotFound)
}
