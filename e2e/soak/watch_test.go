//go:build e2e

package soak

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/stackward/stackward/pkg/openstack"
)

// approvalSlack is how far an approval's decision may trail a change of
// the instance's addresses: the condition's time has a one-second grain
// and the approver reads the cloud through its cache a moment before.
const approvalSlack = 30 * time.Second

// span is a time an address belonged to a node's server.
type span struct {
	ip       string
	from, to time.Time // to is zero while it lasts
}

// ledger is what the soak did and saw, checked against the invariants.
type ledger struct {
	mu             sync.Mutex
	start          time.Time
	spans          map[string][]span // node name -> addresses over time
	deletedServers map[string]bool   // server IDs the soak deleted
	// operatorDeleted are the Nodes the soak deleted itself, as an operator
	// (never-initialized Nodes of deleted servers), by UID.
	operatorDeleted map[types.UID]bool
	checkedCSRs     map[string]bool
	// nodePrefix is how the names of the soak's own nodes begin: only
	// their Nodes and CSRs are judged.
	nodePrefix string
	violations []string
	inv        Invariants
	counts     map[string]int
}

func newLedger() *ledger {
	return &ledger{start: time.Now(), spans: map[string][]span{}, deletedServers: map[string]bool{}, operatorDeleted: map[types.UID]bool{}, checkedCSRs: map[string]bool{}, counts: map[string]int{}}
}

func (l *ledger) count(what string) { l.mu.Lock(); l.counts[what]++; l.mu.Unlock() }

func (l *ledger) violate(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.violations = append(l.violations, fmt.Sprintf("%.0fs: ", time.Since(l.start).Seconds())+fmt.Sprintf(format, args...))
}

func (l *ledger) gain(node, ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spans[node] = append(l.spans[node], span{ip: ip, from: time.Now()})
}

// lose ends the node's address (all of them when ip is "").
func (l *ledger) lose(node, ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range l.spans[node] {
		if s.to.IsZero() && (ip == "" || s.ip == ip) {
			l.spans[node][i].to = time.Now()
		}
	}
}

func (l *ledger) serverDeleted(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deletedServers[id] = true
}

// operatorDeletes notes that the soak itself is about to delete the Node
// with this UID: not the CCM's deletion, never a wrongful one.
func (l *ledger) operatorDeletes(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.operatorDeleted[uid] = true
}

// owned reports whether ip was the node's at some time within slack of at.
func (l *ledger) owned(node, ip string, at time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.spans[node] {
		if s.ip == ip && !s.from.After(at.Add(2*time.Second)) && (s.to.IsZero() || s.to.After(at.Add(-approvalSlack))) {
			return true
		}
	}
	return false
}

// ownedThroughout reports whether ip was the node's from before from
// until after to, without a break.
func (l *ledger) ownedThroughout(node, ip string, from, to time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.spans[node] {
		if s.ip == ip && !s.from.After(from) && (s.to.IsZero() || s.to.After(to)) {
			return true
		}
	}
	return false
}

// watch checks Node deletions and CSR approvals as they happen, through
// informers (which relist across an apiserver restart).
func (l *ledger) watch(ctx context.Context, factory informers.SharedInformerFactory) {
	nodes := factory.Core().V1().Nodes().Informer()
	_, _ = nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		n, ok := obj.(*corev1.Node)
		if !ok || !strings.HasPrefix(n.Name, l.nodePrefix) {
			return
		}
		l.mu.Lock()
		byOperator := l.operatorDeleted[n.UID]
		l.mu.Unlock()
		if byOperator {
			return
		}
		l.count("node deletions")
		_, id, err := openstack.ParseProviderID(n.Spec.ProviderID)
		l.mu.Lock()
		gone := err == nil && l.deletedServers[id]
		l.mu.Unlock()
		if !gone {
			l.mu.Lock()
			l.inv.WrongfulNodeDeletions++
			l.mu.Unlock()
			l.violate("Node %s deleted while its server %q (providerID %q) was not deleted", n.Name, id, n.Spec.ProviderID)
		}
	}})
	csrs := factory.Certificates().V1().CertificateSigningRequests().Informer()
	check := func(obj any) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
			l.checkCSR(csr)
		}
	}
	_, _ = csrs.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: check, UpdateFunc: func(_, obj any) { check(obj) }})
	factory.Start(ctx.Done())
}

func (l *ledger) checkCSR(csr *certificatesv1.CertificateSigningRequest) {
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName ||
		!strings.HasPrefix(csr.Spec.Username, "system:node:"+l.nodePrefix) {
		return
	}
	var at, deniedAt time.Time
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			at = c.LastUpdateTime.Time
		case certificatesv1.CertificateDenied:
			deniedAt = c.LastUpdateTime.Time
		}
	}
	if !deniedAt.IsZero() {
		l.checkDenial(csr, deniedAt)
		return
	}
	l.mu.Lock()
	done := l.checkedCSRs[csr.Name]
	if !at.IsZero() {
		l.checkedCSRs[csr.Name] = true
	}
	l.mu.Unlock()
	if at.IsZero() || done {
		return
	}
	l.count("approvals")
	node := strings.TrimPrefix(csr.Spec.Username, "system:node:")
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		l.violate("approved CSR %s has no PEM request", csr.Name)
		return
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		l.violate("approved CSR %s: %v", csr.Name, err)
		return
	}
	for _, ip := range req.IPAddresses {
		if !l.owned(node, ip.String(), at) {
			l.mu.Lock()
			l.inv.WrongApprovals++
			l.mu.Unlock()
			l.violate("CSR %s of node %s approved at %s with IP SAN %s, not the node's server's then", csr.Name, node, at.Format(time.RFC3339), ip)
		}
	}
}

// checkDenial counts a denial as wrong when the node's server held every
// IP the request names from approvalSlack before the request until
// approvalSlack after the denial: nothing about the addresses was in
// doubt, so only a failure (a cloud error taken for an answer) denies it.
func (l *ledger) checkDenial(csr *certificatesv1.CertificateSigningRequest, at time.Time) {
	l.mu.Lock()
	done := l.checkedCSRs[csr.Name]
	l.checkedCSRs[csr.Name] = true
	l.mu.Unlock()
	if done {
		return
	}
	l.count("denials")
	node := strings.TrimPrefix(csr.Spec.Username, "system:node:")
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		return
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil || len(req.IPAddresses) == 0 {
		return
	}
	for _, ip := range req.IPAddresses {
		if !l.ownedThroughout(node, ip.String(), csr.CreationTimestamp.Add(-approvalSlack), at.Add(approvalSlack)) {
			return
		}
	}
	reason := ""
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateDenied {
			reason = c.Reason + ": " + c.Message
		}
	}
	l.mu.Lock()
	l.inv.WrongDenials++
	l.mu.Unlock()
	l.violate("CSR %s of node %s denied at %s though its server held %v throughout: %s", csr.Name, node, at.Format(time.RFC3339), req.IPAddresses, reason)
}

// other is another cluster's and the operator's resources on the shared
// router and network.
type other struct {
	serverPort, nodePort, lbID, vipPort, fipID string
	routes                                     []routers.Route
}

// snapshot is the other cluster's and the operator's resources as JSON, to
// compare before and after the soak. On the real cloud (volatile) the fields the services themselves change
// are left out: a port's status follows OVN's chassis (DOWN while
// ovn-northd is down), updated_at and revision_number follow every such
// change. What a client can set stays: names, tags, fixed IPs, address
// pairs, the floating IP's port, the load balancer's provisioning status.
func (o *other) snapshot(ctx context.Context, c *clouds, routerID string, volatile bool) (string, error) {
	port := ports.Get(ctx, c.neutron, o.serverPort)
	lb := loadbalancers.Get(ctx, c.octavia, o.lbID)
	fip := floatingips.Get(ctx, c.neutron, o.fipID)
	rt := routers.Get(ctx, c.neutron, routerID)
	np := ports.Get(ctx, c.neutron, o.nodePort)
	for _, r := range []gophercloud.Result{port.Result, lb.Result, fip.Result, rt.Result, np.Result} {
		if r.Err != nil {
			return "", r.Err
		}
	}
	router, _ := rt.Extract()
	var routes []routers.Route
	for _, r := range router.Routes {
		if slices.Contains(o.routes, r) {
			routes = append(routes, r)
		}
	}
	nodePort, _ := np.Extract()
	var operator []ports.AddressPair
	for _, p := range nodePort.AllowedAddressPairs {
		if p.IPAddress == operatorVIP {
			operator = append(operator, p)
		}
	}
	snap := map[string]any{"port": port.Body, "lb": lb.Body, "fip": fip.Body, "routes": routes, "operator": operator}
	if volatile {
		dropKeys(snap, "status", "operating_status", "updated_at", "revision_number")
	}
	b, err := json.Marshal(snap)
	return string(b), err
}

// dropKeys removes keys from every JSON object in v, at any depth.
func dropKeys(v any, keys ...string) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range keys {
			delete(x, k)
		}
		for _, e := range x {
			dropKeys(e, keys...)
		}
	case []any:
		for _, e := range x {
			dropKeys(e, keys...)
		}
	}
}
