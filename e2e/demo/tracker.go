package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/stackward/stackward/e2e/framework"
)

const uninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"

// printer writes one line per event, with the time since the demo started.
type printer struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	width int
}

func newPrinter(start time.Time) *printer { return &printer{w: os.Stdout, start: start, width: 7} }

func (p *printer) stamp() string { return fmt.Sprintf("[%6.1fs]", time.Since(p.start).Seconds()) }

func (p *printer) say(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s %s\n", p.stamp(), fmt.Sprintf(format, args...))
}

func (p *printer) event(node, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s %-*s %s\n", p.stamp(), p.width, node, fmt.Sprintf(format, args...))
}

func (p *printer) plain(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}

// nodeInfo is what the demo knows of a node before it joins.
type nodeInfo struct {
	Name       string `json:"name"`
	ServerID   string `json:"serverID"`
	ProviderID string `json:"providerID"`
	IP         string `json:"ip"`
	Flavor     string `json:"flavor"`
	AZ         string `json:"az"`
	FloatingIP string `json:"floatingIP,omitempty"`
}

// nodeState is a node's progress; zero times have not happened.
type nodeState struct {
	nodeInfo
	launched, registered, approved, issued, initialized, ready time.Time
	approvalReason                                             string
	denials                                                    []string
	node                                                       *corev1.Node
}

func (s *nodeState) done() bool {
	return !s.ready.IsZero() && !s.issued.IsZero() && !s.initialized.IsZero()
}

// tracker follows Nodes and kubelet-serving CSRs through informers and
// prints each node's transitions once, as they happen.
type tracker struct {
	out   *printer
	mu    sync.Mutex
	order []string
	nodes map[string]*nodeState
	// pending are the undecided serving requests of the demo's nodes.
	pending map[string]bool
	change  chan struct{}
	cancel  context.CancelFunc
}

func startTracker(ctx context.Context, cp *framework.ControlPlane, out *printer) (*tracker, error) {
	t := &tracker{out: out, nodes: map[string]*nodeState{}, pending: map[string]bool{}, change: make(chan struct{}, 1)}
	ctx, t.cancel = context.WithCancel(ctx)
	f := informers.NewSharedInformerFactory(cp.Admin, 0)
	nodeInf := f.Core().V1().Nodes().Informer()
	csrInf := f.Certificates().V1().CertificateSigningRequests().Informer()
	onNode := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			t.observeNode(n)
		}
	}
	onCSR := func(obj any) {
		if c, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
			t.observeCSR(c)
		}
	}
	if _, err := nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onNode, UpdateFunc: func(_, n any) { onNode(n) }}); err != nil {
		return nil, err
	}
	if _, err := csrInf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onCSR, UpdateFunc: func(_, c any) { onCSR(c) }}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("watch %v: cache did not sync", typ)
		}
	}
	return t, nil
}

func (t *tracker) stop() { t.cancel() }

func (t *tracker) expect(info nodeInfo) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.order = append(t.order, info.Name)
	t.nodes[info.Name] = &nodeState{nodeInfo: info}
	t.out.width = max(t.out.width, len(info.Name))
}

func (t *tracker) launched(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.nodes[name]; s != nil {
		s.launched = time.Now()
	}
}

func (t *tracker) firstName() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.order) == 0 {
		return "<node>"
	}
	return t.order[0]
}

func (t *tracker) observeNode(n *corev1.Node) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.nodes[n.Name]
	if s == nil {
		return
	}
	s.node = n.DeepCopy()
	now := time.Now()
	if s.registered.IsZero() {
		s.registered = now
		t.out.event(n.Name, "registered (tainted uninitialized)")
	}
	// The CCM removes the taint, then patches the addresses: wait for both.
	if s.initialized.IsZero() && !framework.HasTaint(n, uninitializedTaint) && n.Spec.ProviderID != "" &&
		(s.FloatingIP == "" || strings.Contains(addresses(n), s.FloatingIP)) {
		s.initialized = now
		t.out.event(n.Name, "initialized by stackward-ccm: %s, %s, %s", n.Labels[corev1.LabelInstanceTypeStable], n.Labels[corev1.LabelTopologyZone], addresses(n))
	}
	if s.ready.IsZero() && framework.IsReady(n) {
		s.ready = now
		t.out.event(n.Name, "Ready")
	}
	t.notify()
}

func (t *tracker) observeCSR(c *certificatesv1.CertificateSigningRequest) {
	if c.Spec.SignerName != certificatesv1.KubeletServingSignerName {
		return
	}
	name, ok := strings.CutPrefix(c.Spec.Username, "system:node:")
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.nodes[name]
	if s == nil {
		return
	}
	now := time.Now()
	if framework.IsPending(c) {
		t.pending[c.Name] = true
	} else {
		delete(t.pending, c.Name)
	}
	defer t.notify()
	if cond := framework.Condition(c, certificatesv1.CertificateDenied); cond != nil {
		entry := cond.Reason + ": " + cond.Message
		for _, d := range s.denials {
			if d == entry {
				return
			}
		}
		s.denials = append(s.denials, entry)
		t.out.event(name, "serving certificate DENIED (%s): %s", cond.Reason, cond.Message)
		return
	}
	if cond := framework.Condition(c, certificatesv1.CertificateApproved); cond != nil && s.approved.IsZero() {
		s.approved = now
		s.approvalReason = cond.Reason
		t.out.event(name, "serving certificate approved by %s (%s)", approverOf(cond.Reason), cond.Reason)
	}
	if len(c.Status.Certificate) > 0 && s.issued.IsZero() {
		s.issued = now
	}
}

func approverOf(reason string) string {
	if strings.HasPrefix(reason, "Stackward") {
		return "stackward-approver"
	}
	return "someone else"
}

func addresses(n *corev1.Node) string {
	var parts []string
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeHostName {
			parts = append(parts, string(a.Type)+" "+a.Address)
		}
	}
	return strings.Join(parts, ", ")
}

func (t *tracker) notify() {
	select {
	case t.change <- struct{}{}:
	default:
	}
}

// waitAllDone waits until every node is Ready, initialized and has a
// serving certificate and no request of theirs is undecided (the CCM's
// addresses make kubelets ask again), or timeout, or ctx ends.
func (t *tracker) waitAllDone(ctx context.Context, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		if t.allDone() {
			return true
		}
		select {
		case <-t.change:
		case <-deadline:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (t *tracker) allDone() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nodesDoneLocked() && len(t.pending) == 0
}

// nodesDone: every node Ready, initialized, with a serving certificate.
func (t *tracker) nodesDone() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nodesDoneLocked()
}

func (t *tracker) nodesDoneLocked() bool {
	for _, s := range t.nodes {
		if !s.done() {
			return false
		}
	}
	return len(t.nodes) > 0
}
