//go:build e2e

package soak

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/internal/cloudsim"
)

// run plays the schedule for the soak's duration: every 2 s one action
// drawn from the seeded generator; at most one cloud fault at a time, each
// for a bounded window; a CCM and an approver failover every quarter; one
// apiserver restart half way.
func (s *soak) run() {
	end := time.Now().Add(s.d)
	var faultUntil time.Time
	nextCCM, nextAppr := time.Now().Add(s.d/4), time.Now().Add(s.d/4+s.d/8)
	restarted := false
	for time.Now().Before(end) && s.ctx.Err() == nil {
		now := time.Now()
		s.checkArmed(false)
		s.actAsAdmin(s.ctx)
		if !faultUntil.IsZero() && now.After(faultUntil) {
			s.checkArmed(true)
			s.clearFaults()
			faultUntil = time.Time{}
		}
		switch {
		case now.After(nextCCM):
			s.fault("ccm failover", "stop stackward-ccm, start another", s.elapsed())
			s.stopCCM()
			s.startCCM()
			nextCCM = now.Add(s.d / 4)
		case now.After(nextAppr):
			s.fault("approver failover", "stop stackward-approver, start another", s.elapsed())
			s.stopAppr()
			s.startApprover()
			nextAppr = now.Add(s.d / 4)
		case !restarted && now.After(end.Add(-s.d/2)):
			restarted = true
			at := s.elapsed()
			if err := s.cp.RestartAPIServer(s.ctx); err != nil {
				s.t.Fatal(err)
			}
			s.report.Faults = append(s.report.Faults, Fault{At: at, Until: s.elapsed(), Kind: "apiserver restart", Detail: "kube-apiserver stopped and started"})
		default:
			s.step(&faultUntil)
		}
		select {
		case <-s.ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	s.checkArmed(true)
	s.clearFaults()
}

// step draws one action.
func (s *soak) step(faultUntil *time.Time) {
	r := s.rng.IntN(100)
	services := []string{"compute", "network", "load-balancer"}
	window := time.Duration(4+s.rng.IntN(9)) * time.Second
	faultFree := faultUntil.IsZero()
	until := s.elapsed() + window.Seconds()
	if s.real != nil {
		s.realStep(r, faultUntil)
		return
	}
	switch {
	case r < 15 && faultFree:
		svc := services[s.rng.IntN(len(services))]
		code := []int{500, 503, 429}[s.rng.IntN(3)]
		s.setFault(cloudsim.FaultRule{Service: svc, Status: code, ErrorRate: 0.5, RetryAfter: time.Second})
		s.fault(fmt.Sprintf("HTTP %d", code), fmt.Sprintf("%s: half the calls fail for %s", svc, window), until)
		*faultUntil = time.Now().Add(window)
	case r < 22 && faultFree:
		svc := services[s.rng.IntN(len(services))]
		lat := time.Duration(1+s.rng.IntN(3)) * time.Second
		s.setFault(cloudsim.FaultRule{Service: svc, Latency: lat})
		s.fault("slow responses", fmt.Sprintf("%s: +%s per call for %s", svc, lat, window), until)
		*faultUntil = time.Now().Add(window)
	case r < 26 && faultFree:
		svc := services[s.rng.IntN(len(services))]
		s.setFault(cloudsim.FaultRule{Service: svc, Hang: true, Times: 2})
		s.fault("timeouts", fmt.Sprintf("%s: two calls hang until the client's timeout", svc), until)
		*faultUntil = time.Now().Add(window)
	case r < 31 && faultFree:
		s.sim.Sim.RevokeTokens()
		s.setFault(cloudsim.FaultRule{Service: "identity", Status: 503})
		s.fault("token expiry + keystone outage", fmt.Sprintf("every token revoked, Keystone 503 for %s", window), until)
		*faultUntil = time.Now().Add(window)
	case r < 35 && faultFree:
		s.setFault(cloudsim.FaultRule{Service: "load-balancer", Operation: "provisioning", Status: 500, Times: 1})
		s.fault(kindOctaviaError, fmt.Sprintf("the next load balancer change ends in ERROR (armed for %s)", window), until)
		s.armed = &armedFault{index: len(s.report.Faults) - 1}
		*faultUntil = time.Now().Add(window)
	case r < 39 && faultFree:
		// A lost amphora: Octavia's controller retries, then gives up.
		hangFor := time.Duration(20+s.rng.IntN(41)) * time.Second
		rule := cloudsim.FaultRule{Service: "load-balancer", Operation: "provisioning", Hang: true, HangFor: hangFor, Times: 1}
		ends := "ACTIVE"
		if s.rng.IntN(2) == 0 {
			rule.Status, ends = 500, "ERROR"
		}
		s.setFault(rule)
		s.fault(kindOctaviaStuck, fmt.Sprintf("the next load balancer change stays PENDING_* for %s, then ends %s (armed for %s)", hangFor, ends, window), until)
		s.armed = &armedFault{index: len(s.report.Faults) - 1, hangFor: hangFor}
		*faultUntil = time.Now().Add(window)
	case r < 42 && faultFree:
		// A service process killed or restarted under its requests, as on
		// the real lane (make soak-real): no answer at all.
		svc := services[s.rng.IntN(len(services))]
		s.setFault(cloudsim.FaultRule{Service: svc, Drop: true, ErrorRate: 0.5})
		s.fault("connections dropped", fmt.Sprintf("%s: half the calls get no answer for %s", svc, window), until)
		*faultUntil = time.Now().Add(window)
	case r < 45 && faultFree:
		// An OVN northd outage, as on the real lane: every NIC DOWN. A
		// serving CSR made meanwhile must stay pending, not be denied.
		n := s.portsDown("DOWN")
		s.fault("ports DOWN", fmt.Sprintf("network: the %d ports of every node DOWN for %s", n, window), until)
		*faultUntil = time.Now().Add(window)
	case r < 47 && faultFree:
		// A worker dead mid-flow, as on the real lane: a load balancer
		// ACTIVE over children PENDING_CREATE for good, refusing every
		// change under it; only the admin's ERROR ends it (actAsAdmin).
		if lb := s.strandOne(); lb != "" {
			s.fault(kindOctaviaStranded, fmt.Sprintf("load balancer %s: listener, pool and members PENDING_CREATE for good", lb), s.elapsed())
		}
	default:
		s.churn(r)
	}
}

// churn is the schedule's actions that are no fault.
func (s *soak) churn(r int) {
	switch {
	case r < 50:
		s.leave()
	case r < 62:
		s.rejoin()
	case r < 71:
		s.moveFloatingIP()
	default:
		s.churnService()
	}
}

const (
	kindOctaviaError    = "octavia ERROR"
	kindOctaviaStuck    = "octavia stuck PENDING"
	kindOctaviaStranded = "octavia children stranded"
)

// portsDown sets every soak server's ports to status (DOWN in an OVN
// northd outage, ACTIVE after it) and says how many changed.
func (s *soak) portsDown(status string) int {
	s.mu.Lock()
	var ids []string
	for _, n := range s.nodes {
		if n.serverID != "" {
			ids = append(ids, n.serverID)
		}
	}
	s.mu.Unlock()
	total := 0
	for _, id := range ids {
		n, err := s.sim.Sim.SetServerPortsStatus(id, status)
		if err != nil && !errors.Is(err, cloudsim.ErrNotFound) {
			s.t.Fatal(err)
		}
		total += n
	}
	s.downPorts = status != "ACTIVE"
	return total
}

// strandOne strands the children of one soak Service's ACTIVE load
// balancer (cloudsim's StrandChildren) and returns its ID, "" when none
// is ACTIVE.
func (s *soak) strandOne() string {
	pages, err := loadbalancers.List(s.api.octavia, loadbalancers.ListOpts{}).AllPages(s.ctx)
	if err != nil {
		return "" // the cloud is faulted: no strand this time
	}
	lbs, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		return ""
	}
	var ids []string
	for _, lb := range lbs {
		if strings.HasPrefix(lb.Name, "kube_service_lab_soak_") && lb.ProvisioningStatus == "ACTIVE" {
			ids = append(ids, lb.ID)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	id := ids[s.rng.IntN(len(ids))]
	if err := s.sim.Sim.StrandChildren(id); err != nil {
		s.t.Fatal(err)
	}
	return id
}

// armedFault is a one-shot Octavia provisioning fault: it fires on the next
// load balancer change, if one comes while it is armed.
type armedFault struct {
	index   int           // in report.Faults
	hangFor time.Duration // how long the change then stays PENDING_*
}

// checkArmed watches the armed Octavia fault: once it fires, its reported
// window becomes the time the change stays stuck (other faults may come
// meanwhile: the stuck change holds only its own load balancer); if it is
// disarmed without having fired, it is reported as a fault kind of its own
// so that the counts by kind are only faults that happened.
func (s *soak) checkArmed(disarm bool) {
	a := s.armed
	if a == nil {
		return
	}
	f := &s.report.Faults[a.index]
	if uses := s.sim.Sim.FaultUses(); len(uses) > 0 && uses[0] > 0 {
		f.Until = s.elapsed() + a.hangFor.Seconds()
		f.Detail += fmt.Sprintf("; fired at %.0fs", s.elapsed())
		s.armed = nil
		return
	}
	if disarm {
		f.Kind += " (armed, not fired)"
		f.Detail += "; no load balancer change came while it was armed"
		f.Until = s.elapsed()
		s.armed = nil
	}
}

func (s *soak) setFault(f cloudsim.FaultRule) {
	if err := s.sim.Sim.SetFault(f); err != nil {
		s.t.Fatal(err)
	}
}

// pick returns a random node (never soak-1, which carries the operator's
// pair) that is up or down as asked.
func (s *soak) pick(up bool) *node {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name, n := range s.nodes {
		if n.up == up && name != s.nodeName(1) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	return s.nodes[names[s.rng.IntN(len(names))]]
}

// leave deletes a node's server and powers its kubelet off, as a VM
// deleted in the cloud; the lifecycle controller should delete the Node.
func (s *soak) leave() {
	n := s.pick(true)
	if n == nil || s.upCount() <= len(s.nodes)/2 {
		return
	}
	s.led.serverDeleted(n.serverID)
	if n.fip != "" {
		// The soak's own floating IP goes with the VM, as a user's would.
		s.detachFloatingIP(n.serverID, n.fip)
	}
	n.kubelet.Remove()
	s.deleteServer(n.serverID)
	s.led.lose(n.name, "")
	s.mu.Lock()
	n.up, n.kubelet, n.fip = false, nil, ""
	s.mu.Unlock()
	s.led.count("servers deleted")
}

// rejoin recreates a deleted node's server with the same name and address
// once its Node is gone, and boots a new kubelet.
func (s *soak) rejoin() {
	n := s.pick(false)
	if n == nil {
		return
	}
	k, err := s.cp.Admin.CoreV1().Nodes().Get(s.ctx, n.name, metav1.GetOptions{})
	switch {
	case err == nil && k.Spec.ProviderID == "" && time.Since(k.CreationTimestamp.Time) > 2*time.Minute:
		// Its server was deleted before the CCM matched the Node to it. The
		// CCM does not delete a Node it never matched (its name may just not
		// be a server's) and says so in an InstanceNotFound Event; the
		// operator removes it, as the soak does here.
		s.led.operatorDeletes(k.UID)
		if err := s.cp.Admin.CoreV1().Nodes().Delete(s.ctx, n.name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(k.UID))}); err == nil {
			s.led.count("never-initialized Nodes of deleted servers removed by the operator")
		}
		return
	case !apierrors.IsNotFound(err):
		return
	}
	s.join(n.name, n.i)
	s.led.count("servers recreated with a reused address")
}

func (s *soak) upCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := 0
	for _, n := range s.nodes {
		if n.up {
			c++
		}
	}
	return c
}

// moveFloatingIP takes a node's floating IP away and gives another node a
// new one (the kubelet then asks for a new serving certificate).
func (s *soak) moveFloatingIP() {
	from, to := s.pick(true), s.pick(true)
	if from == nil || to == nil || from == to || to.fip != "" {
		return
	}
	if from.fip != "" {
		s.detachFloatingIP(from.serverID, from.fip)
		s.led.lose(from.name, from.fip)
		from.fip = ""
	}
	ip := s.attachFloatingIP(to.serverID)
	s.led.gain(to.name, ip)
	s.mu.Lock()
	to.fip = ip
	s.mu.Unlock()
	s.led.count("floating IP moves")
}

// churnService creates, updates or deletes one of the soak's Services.
func (s *soak) churnService() {
	name := fmt.Sprintf("svc-%02d", s.rng.IntN(s.nServices))
	svcs := s.cp.Admin.CoreV1().Services("soak")
	s.mu.Lock()
	_, exists := s.services[name]
	s.mu.Unlock()
	var err error
	switch {
	case !exists:
		_, err = svcs.Create(s.ctx, lbService(name), metav1.CreateOptions{})
		if err == nil {
			s.mu.Lock()
			s.services[name] = time.Now()
			s.mu.Unlock()
			s.led.count("services created")
		}
	case s.rng.IntN(2) == 0:
		var svc *corev1.Service
		if svc, err = svcs.Get(s.ctx, name, metav1.GetOptions{}); err == nil {
			svc.Spec.Ports[0].Port = 80 + int32(s.rng.IntN(3))
			_, err = svcs.Update(s.ctx, svc, metav1.UpdateOptions{})
			s.led.count("services updated")
		}
	default:
		err = svcs.Delete(s.ctx, name, metav1.DeleteOptions{})
		if err == nil {
			s.mu.Lock()
			delete(s.services, name)
			s.mu.Unlock()
			s.led.count("services deleted")
		}
	}
	if err != nil {
		s.led.count("apiserver errors seen by the soak")
	}
}

func lbService(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "soak", Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
}

// lag is the age of the oldest unconverged Node or Service, and how many
// there are; -1 when the apiserver cannot say.
func (s *soak) lag() (float64, int) {
	lag, n, _ := s.unconverged()
	return lag, n
}

// unconverged is lag with the names of the unconverged objects.
func (s *soak) unconverged() (float64, int, []string) {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	nodes, err := s.cp.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return -1, 0, nil
	}
	svcs, err := s.cp.Admin.CoreV1().Services("soak").List(ctx, metav1.ListOptions{})
	if err != nil {
		return -1, 0, nil
	}
	byName := map[string]corev1.Node{}
	for _, n := range nodes.Items {
		byName[n.Name] = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	oldest, count := 0.0, 0
	var names []string
	for _, n := range s.nodes {
		if !n.up {
			continue
		}
		k, ok := byName[n.name]
		why := ""
		switch {
		case !ok:
			why = "no Node"
		case k.Spec.ProviderID == "":
			why = "no providerID"
		case framework.HasTaint(&k, "node.cloudprovider.kubernetes.io/uninitialized"):
			why = "uninitialized"
		case !framework.IsReady(&k):
			why = "not Ready: " + readySummary(&k)
		default:
			continue
		}
		count++
		names = append(names, "node "+n.name+" ("+why+")")
		oldest = max(oldest, time.Since(n.since).Seconds())
	}
	for _, svc := range svcs.Items {
		if len(svc.Status.LoadBalancer.Ingress) > 0 {
			continue
		}
		count++
		names = append(names, "service "+svc.Name)
		oldest = max(oldest, time.Since(svc.CreationTimestamp.Time).Seconds())
	}
	return oldest, count, names
}

// converge waits, after the last fault, until every Node and Service has
// converged and every up node's route is on the router. Nothing is helped
// along but by the real cloud's admin, and only as a LoadBalancerStuck
// Warning asks (actAsAdmin): a load balancer Octavia left in ERROR must be
// recreated by stackward-ccm itself. A Node not Ready for 30 s is diagnosed in the log
// while waiting, and every unconverged one in the violation.
func (s *soak) converge() {
	start := time.Now()
	logged := map[string]bool{}
	err := wait.PollUntilContextTimeout(s.ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		if _, n, names := s.unconverged(); n != 0 {
			s.actAsAdmin(ctx)
			for _, name := range names {
				if n := s.nodeOf(name); n != nil && !logged[n.name] && time.Since(start) > 30*time.Second {
					logged[n.name] = true
					s.t.Logf("converge: %s after %.0fs: %s", name, time.Since(start).Seconds(), s.diagnoseNode(ctx, n))
				}
			}
			return false, nil
		}
		return s.routesConverged(ctx), nil
	})
	s.report.ConvergenceSeconds = time.Since(start).Seconds()
	if err != nil {
		lag, n, names := s.unconverged()
		var why []string
		for _, name := range names {
			if k := s.nodeOf(name); k != nil {
				why = append(why, k.name+": "+s.diagnoseNode(s.ctx, k))
				if kl := s.kubeletOf(k); kl != nil {
					done, err := kl.Process.Exited()
					s.t.Logf("kubelet of %s (launched %.0fs in, exited %v %v):\n%s", k.name, k.since.Sub(s.led.start).Seconds(), done, err, kl.Process.Tail(3000))
				}
			} else if svc, ok := strings.CutPrefix(name, "service "); ok {
				why = append(why, "service "+svc+": "+s.diagnoseService(s.ctx, svc))
			}
		}
		s.led.violate("not converged %.0fs after the last fault: %d objects (%v), oldest %.0fs; routes converged %v; diagnosis:\n  %s",
			time.Since(start).Seconds(), n, names, lag, s.routesConverged(s.ctx), strings.Join(why, "\n  "))
	}
	after, err := s.other.snapshot(s.ctx, s.api, s.routerID, s.real != nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if after != s.before {
		s.led.mu.Lock()
		s.led.inv.OtherResourcesChanged++
		s.led.mu.Unlock()
		s.led.violate("the other cluster's or the operator's resources changed:\nbefore %s\nafter  %s", s.before, after)
	}
}

func (s *soak) routesConverged(ctx context.Context) bool {
	r, err := routers.Get(ctx, s.api.neutron, s.routerID).Extract()
	if err != nil {
		return false
	}
	nodes, err := s.cp.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, n := range nodes.Items {
		if n.Spec.ProviderID == "" {
			continue // never initialized: the route controller waits for the CCM
		}
		hop := ""
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				hop = a.Address
			}
		}
		if n.Spec.PodCIDR != "" && !slices.Contains(r.Routes, routers.Route{DestinationCIDR: n.Spec.PodCIDR, NextHop: hop}) {
			return false
		}
	}
	return true
}

// cleanUp deletes every Service and the nodes' floating IPs, then counts
// what is left of this cluster in the cloud.
func (s *soak) cleanUp() {
	ctx := s.ctx
	if list, err := s.cp.Admin.CoreV1().Services("soak").List(ctx, metav1.ListOptions{}); err == nil {
		for _, svc := range list.Items {
			_ = s.cp.Admin.CoreV1().Services("soak").Delete(ctx, svc.Name, metav1.DeleteOptions{})
		}
	}
	s.mu.Lock()
	for _, n := range s.nodes {
		if n.fip != "" {
			s.detachFloatingIP(n.serverID, n.fip)
			n.fip = ""
		}
	}
	s.mu.Unlock()
	var lbs []loadbalancers.LoadBalancer
	var fips []floatingips.FloatingIP
	var vips []ports.Port
	_ = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		lp, err := loadbalancers.List(s.api.octavia, nil).AllPages(ctx)
		if err != nil {
			return false, nil
		}
		all, _ := loadbalancers.ExtractLoadBalancers(lp)
		lbs = slices.DeleteFunc(all, func(lb loadbalancers.LoadBalancer) bool { return lb.ID == s.other.lbID })
		fp, err := floatingips.List(s.api.neutron, floatingips.ListOpts{}).AllPages(ctx)
		if err != nil {
			return false, nil
		}
		allF, _ := floatingips.ExtractFloatingIPs(fp)
		fips = slices.DeleteFunc(allF, func(f floatingips.FloatingIP) bool { return f.ID == s.other.fipID })
		pp, err := ports.List(s.api.neutron, ports.ListOpts{DeviceOwner: "Octavia"}).AllPages(ctx)
		if err != nil {
			return false, nil
		}
		allP, _ := ports.ExtractPorts(pp)
		vips = slices.DeleteFunc(allP, func(p ports.Port) bool { return p.ID == s.other.vipPort || s.labNoopVIPPort(ctx, p) })
		return len(lbs)+len(fips)+len(vips) == 0, nil
	})
	s.led.mu.Lock()
	s.led.inv.OrphanLoadBalancers, s.led.inv.OrphanFloatingIPs, s.led.inv.OrphanPorts = len(lbs), len(fips), len(vips)
	s.led.mu.Unlock()
	for _, lb := range lbs {
		s.led.violate("orphaned load balancer %s (%s, %s)", lb.Name, lb.ID, lb.ProvisioningStatus)
	}
	for _, f := range fips {
		s.led.violate("orphaned floating IP %s (%s) on port %q", f.FloatingIP, f.Description, f.PortID)
	}
	for _, p := range vips {
		s.led.violate("orphaned Octavia port %s", p.ID)
	}
}
