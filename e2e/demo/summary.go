package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/e2e/framework"
)

// summary is what the demo measured; -summary-json writes it as is.
type summary struct {
	Nodes               []nodeSummary  `json:"nodes"`
	AllReady            bool           `json:"allReady"`
	ControlPlaneStartup float64        `json:"controlPlaneStartupSeconds"`
	Elapsed             float64        `json:"elapsedSeconds"`
	Decisions           map[string]int `json:"approverDecisions"` // "decision/reason" -> count, from the approver's metrics
	ServingCSRs         map[string]int `json:"servingCSRs"`       // "Approved/reason", "Denied/reason", "Pending", "Issued"
	CloudCalls          map[string]int `json:"cloudCalls"`        // operation -> count, from the simulator
	CloudCallsTotal     int            `json:"cloudCallsTotal"`
	LoadBalancer        *lbSummary     `json:"loadBalancer,omitempty"` // nil: not tried (no service controller, or -lb=false)
	Kubeconfig          string         `json:"kubeconfig"`
	APIServer           string         `json:"apiServer"`
}

// nodeSummary times are seconds since the node's kubelet started; -1 means
// it did not happen.
type nodeSummary struct {
	nodeInfo
	Registered     float64  `json:"registered"`
	CertApproved   float64  `json:"certApproved"`
	CertIssued     float64  `json:"certIssued"`
	Initialized    float64  `json:"initialized"`
	Ready          float64  `json:"ready"`
	ApprovalReason string   `json:"approvalReason,omitempty"`
	Denials        []string `json:"denials,omitempty"`
	NodeProviderID string   `json:"nodeProviderID"`
	InstanceType   string   `json:"instanceType"`
	Zone           string   `json:"zone"`
	Addresses      []string `json:"addresses"`
}

func (d *demo) summary(ctx context.Context) summary {
	s := summary{
		AllReady:            d.tracker.nodesDone(),
		ControlPlaneStartup: d.cp.StartupTime.Seconds(),
		Elapsed:             time.Since(d.start).Seconds(),
		Decisions:           approverDecisions(d.sw),
		ServingCSRs:         map[string]int{},
		CloudCalls:          d.cloud.Sim.Calls(),
	}
	for _, n := range s.CloudCalls {
		s.CloudCallsTotal += n
	}
	d.tracker.mu.Lock()
	for _, name := range d.tracker.order {
		st := d.tracker.nodes[name]
		ns := nodeSummary{
			nodeInfo:       st.nodeInfo,
			Registered:     since(st.launched, st.registered),
			CertApproved:   since(st.launched, st.approved),
			CertIssued:     since(st.launched, st.issued),
			Initialized:    since(st.launched, st.initialized),
			Ready:          since(st.launched, st.ready),
			ApprovalReason: st.approvalReason,
			Denials:        st.denials,
		}
		if n := st.node; n != nil {
			ns.NodeProviderID = n.Spec.ProviderID
			ns.InstanceType = n.Labels[corev1.LabelInstanceTypeStable]
			ns.Zone = n.Labels[corev1.LabelTopologyZone]
			for _, a := range n.Status.Addresses {
				ns.Addresses = append(ns.Addresses, string(a.Type)+"="+a.Address)
			}
		}
		s.Nodes = append(s.Nodes, ns)
	}
	d.tracker.mu.Unlock()

	list, err := d.cp.Admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, c := range list.Items {
			if c.Spec.SignerName != certificatesv1.KubeletServingSignerName {
				continue
			}
			switch {
			case framework.Condition(&c, certificatesv1.CertificateDenied) != nil:
				s.ServingCSRs["Denied/"+framework.Condition(&c, certificatesv1.CertificateDenied).Reason]++
			case framework.Condition(&c, certificatesv1.CertificateApproved) != nil:
				s.ServingCSRs["Approved/"+framework.Condition(&c, certificatesv1.CertificateApproved).Reason]++
			default:
				s.ServingCSRs["Pending"]++
			}
			if len(c.Status.Certificate) > 0 {
				s.ServingCSRs["Issued"]++
			}
		}
	}
	return s
}

func since(from, to time.Time) float64 {
	if from.IsZero() || to.IsZero() {
		return -1
	}
	return to.Sub(from).Seconds()
}

// approverDecisions reads stackward_csr_decisions_total{decision,reason}.
func approverDecisions(sw *framework.Stackward) map[string]int {
	out := map[string]int{}
	families, err := sw.ApproverMetrics.Gather()
	if err != nil {
		return out
	}
	for _, f := range families {
		if f.GetName() != "stackward_csr_decisions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if v := int(m.GetCounter().GetValue()); v > 0 {
				out[labels["decision"]+"/"+labels["reason"]] += v
			}
		}
	}
	return out
}

func printSummary(p *printer, s summary) {
	p.plain("")
	p.plain("Summary (seconds after each kubelet started)")
	p.plain("  %-8s %-10s %-5s %-15s %-13s %10s %9s %7s %12s %6s", "node", "flavor", "zone", "node IP", "floating IP", "registered", "approved", "issued", "initialized", "Ready")
	var ready []float64
	for _, n := range s.Nodes {
		p.plain("  %-8s %-10s %-5s %-15s %-13s %10s %9s %7s %12s %6s", n.Name, n.Flavor, n.AZ, n.IP, dash(n.FloatingIP),
			secs(n.Registered), secs(n.CertApproved), secs(n.CertIssued), secs(n.Initialized), secs(n.Ready))
		if n.Ready >= 0 {
			ready = append(ready, n.Ready)
		}
	}
	if len(ready) > 0 {
		slices.Sort(ready)
		p.plain("  Ready: %d/%d nodes; median %.1fs, slowest %.1fs after their kubelet started", len(ready), len(s.Nodes), ready[len(ready)/2], ready[len(ready)-1])
	} else {
		p.plain("  Ready: 0/%d nodes", len(s.Nodes))
	}
	p.plain("  Approver decisions: %s", counts(s.Decisions))
	p.plain("  Serving CSRs:       %s", counts(s.ServingCSRs))
	perNode := 0.0
	if len(s.Nodes) > 0 {
		perNode = float64(s.CloudCallsTotal) / float64(len(s.Nodes))
	}
	p.plain("  Cloud calls:        %d in all (%.1f per node):", s.CloudCallsTotal, perNode)
	for _, line := range wrap(counts(s.CloudCalls), 96) {
		p.plain("    %s", line)
	}
	if lb := s.LoadBalancer; lb != nil {
		if lb.Address != "" {
			p.plain("  LoadBalancer:       %s got %s in %.1fs", lb.Service, lb.Address, lb.Seconds)
		} else {
			p.plain("  LoadBalancer:       %s: %s", lb.Service, lb.Error)
		}
	}
	p.plain("  Control plane ready in %.1fs; everything up in %.1fs", s.ControlPlaneStartup, s.Elapsed)
}

func secs(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// counts renders a map as "key=n, ..." with the largest counts first.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// wrap breaks a ", "-separated list into lines of at most width.
func wrap(list string, width int) []string {
	var lines []string
	line := ""
	for _, item := range strings.Split(list, ", ") {
		if line != "" && len(line)+2+len(item) > width {
			lines = append(lines, line+",")
			line = ""
		}
		if line != "" {
			line += ", "
		}
		line += item
	}
	return append(lines, line)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
