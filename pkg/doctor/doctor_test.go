package doctor

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stackward/stackward/internal/openstacktest"
	"github.com/stackward/stackward/pkg/openstack"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// failing is a Nova whose every call fails with err.
func failing(err error) *openstacktest.Compute {
	c := openstacktest.NewCompute()
	c.SetErr(err)
	return c
}

func server(id, name, ip string) openstack.Server {
	return openstack.Server{
		ID: id, Name: name, Status: openstack.StatusActive, FlavorName: "m1.small", AvailabilityZone: "az-1",
		Addresses: map[string][]openstack.ServerAddress{"lab": {{Addr: ip, Version: 4, Type: openstack.AddressFixed}}},
	}
}

type nodeOpt func(*corev1.Node)

func node(name string, opts ...nodeOpt) corev1.Node {
	n := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-10 * time.Minute))},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
		}},
	}
	for _, o := range opts {
		o(&n)
	}
	return n
}

func uninitialized(n *corev1.Node) {
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: UninitializedTaint, Effect: corev1.TaintEffectNoSchedule})
}

func providerID(id string) nodeOpt { return func(n *corev1.Node) { n.Spec.ProviderID = id } }

func nodeIP(ip string) nodeOpt {
	return func(n *corev1.Node) { n.Annotations = map[string]string{providedNodeIPAnnotation: ip} }
}

func notReady(n *corev1.Node) {
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
		Message: "Kubelet stopped posting node status.", LastTransitionTime: metav1.NewTime(now.Add(-2 * time.Minute))}}
}

type csrOpt func(*certificatesv1.CertificateSigningRequest)

func csr(t *testing.T, name, node string, created time.Duration, ips []string, opts ...csrOpt) certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		DNSNames: []string{node},
	}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	c := certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-created))},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: certificatesv1.KubeletServingSignerName,
			Username:   "system:node:" + node,
			Groups:     []string{"system:nodes", "system:authenticated"},
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
		},
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func decided(typ certificatesv1.RequestConditionType, reason, message string, ago time.Duration) csrOpt {
	return func(c *certificatesv1.CertificateSigningRequest) {
		c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: message,
			LastUpdateTime: metav1.NewTime(now.Add(-ago)),
		})
	}
}

func issued(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = []byte("cert") }

func TestDiagnose(t *testing.T) {
	const (
		id1 = "11111111-1111-1111-1111-111111111111"
		id2 = "22222222-2222-2222-2222-222222222222"
		id3 = "33333333-3333-3333-3333-333333333333"
	)
	servers := []openstack.Server{server(id1, "web-1", "10.0.0.1"), server(id2, "web-2", "10.0.0.2"), server(id3, "web-3", "10.0.0.3")}
	approved := decided(certificatesv1.CertificateApproved, "StackwardVerified", "verified against instance "+id1, 9*time.Minute)
	denyIP := decided(certificatesv1.CertificateDenied, "IPNotOfInstance", "IP SAN 10.0.0.2 is not an address of instance "+id3+" (cloud reports 10.0.0.3)", 5*time.Minute)

	type want struct {
		node     string
		kinds    []Kind
		hint     []string // substrings of the first finding's hint
		cloud    func(*CloudView) error
		check    func(Finding) error // of the first finding
		reason   string
		requests []string
	}
	tests := []struct {
		name    string
		nodes   []corev1.Node
		csrs    func(t *testing.T) []certificatesv1.CertificateSigningRequest
		compute *openstacktest.Compute // nil: no cloud
		want    []want
		counts  [3]int // uninitialized nodes, pending CSRs, denied CSRs
	}{
		{
			name:  "a healthy cluster has no findings",
			nodes: []corev1.Node{node("web-1", providerID("openstack:///"+id1))},
			csrs: func(t *testing.T) []certificatesv1.CertificateSigningRequest {
				return list(csr(t, "csr-1", "web-1", 10*time.Minute, nil, approved, issued))
			},
			compute: openstacktest.NewCompute(servers...),
		},
		{
			name:    "an uninitialized node whose name matches no server is told to set --provider-id",
			nodes:   []corev1.Node{node("ghost", uninitialized)},
			compute: openstacktest.NewCompute(servers...),
			want: []want{{node: "ghost", kinds: []Kind{NodeUninitialized}, hint: []string{"No server is named ghost", "--provider-id"},
				cloud: func(v *CloudView) error {
					return expect(v.NotFound && !v.Found && v.Error == "", "want not found, got %+v", v)
				}}},
			counts: [3]int{1, 0, 0},
		},
		{
			name:    "an uninitialized node whose providerID names no server says the ID is wrong or the VM gone",
			nodes:   []corev1.Node{node("web-9", uninitialized, providerID("openstack:///99999999-9999-9999-9999-999999999999"))},
			compute: openstacktest.NewCompute(servers...),
			want:    []want{{node: "web-9", kinds: []Kind{NodeUninitialized}, hint: []string{"No server has the ID", "delete the Node"}}},
			counts:  [3]int{1, 0, 0},
		},
		{
			name:    "an uninitialized node whose --node-ip is not its server's names the cloud's addresses",
			nodes:   []corev1.Node{node("web-3", uninitialized, nodeIP("10.0.0.2"))},
			compute: openstacktest.NewCompute(servers...),
			want: []want{{node: "web-3", kinds: []Kind{NodeUninitialized}, hint: []string{"--node-ip 10.0.0.2", "InternalIP 10.0.0.3"},
				cloud: func(v *CloudView) error {
					return expect(v.Found && v.ServerID == id3 && v.Status == "ACTIVE" && v.hasIP("10.0.0.3"), "want web-3's server, got %+v", v)
				}}},
			counts: [3]int{1, 0, 0},
		},
		{
			name:  "a request denied for another server's IP shows the reason, what was asked and the cloud's addresses",
			nodes: []corev1.Node{node("web-3", providerID("openstack:///"+id3))},
			csrs: func(t *testing.T) []certificatesv1.CertificateSigningRequest {
				return list(csr(t, "csr-3", "web-3", 6*time.Minute, []string{"10.0.0.2"}, denyIP))
			},
			compute: openstacktest.NewCompute(servers...),
			want: []want{{node: "web-3", kinds: []Kind{ServingCSRDenied}, reason: "IPNotOfInstance", requests: []string{"DNS:web-3", "IP:10.0.0.2"},
				hint: []string{"InternalIP 10.0.0.3", "--node-ip", "kubectl delete csr csr-3"}}},
			counts: [3]int{0, 0, 1},
		},
		{
			name:  "a denied request followed by an approved one is history, not a finding",
			nodes: []corev1.Node{node("web-3", providerID("openstack:///"+id3))},
			csrs: func(t *testing.T) []certificatesv1.CertificateSigningRequest {
				return list(csr(t, "csr-old", "web-3", 6*time.Minute, []string{"10.0.0.2"}, denyIP),
					csr(t, "csr-new", "web-3", time.Minute, []string{"10.0.0.3"}, approved, issued))
			},
			compute: openstacktest.NewCompute(servers...),
			counts:  [3]int{0, 0, 1},
		},
		{
			name:  "a kubelet denied again and again is one finding, the newest, counting the others",
			nodes: []corev1.Node{node("web-3", providerID("openstack:///"+id3))},
			csrs: func(t *testing.T) []certificatesv1.CertificateSigningRequest {
				return list(
					csr(t, "csr-2", "web-3", 3*time.Minute, []string{"10.0.0.2"}, decided(certificatesv1.CertificateDenied, "IPNotOfInstance", "second", 3*time.Minute)),
					csr(t, "csr-3", "web-3", time.Minute, []string{"10.0.0.2"}, decided(certificatesv1.CertificateDenied, "IPNotOfInstance", "third", time.Minute)),
					csr(t, "csr-1", "web-3", 5*time.Minute, []string{"10.0.0.2"}, decided(certificatesv1.CertificateDenied, "IPNotOfInstance", "first", 5*time.Minute)),
				)
			},
			compute: openstacktest.NewCompute(servers...),
			want: []want{{node: "web-3", kinds: []Kind{ServingCSRDenied}, hint: []string{"kubectl delete csr csr-3"},
				check: func(f Finding) error {
					return expect(f.CSR == "csr-3" && f.Message == "third" && f.EarlierDenials == 2, "got %s %q with %d earlier", f.CSR, f.Message, f.EarlierDenials)
				}}},
			counts: [3]int{0, 0, 3},
		},
		{
			name:  "a serving request from a user that is not a node says nothing about nodes",
			nodes: []corev1.Node{node("web-1")},
			csrs: func(t *testing.T) []certificatesv1.CertificateSigningRequest {
				c := csr(t, "csr-x", "web-1", 5*time.Minute, []string{"10.0.0.1"})
				c.Spec.Username = "mallory"
				return list(c)
			},
			compute: openstacktest.NewCompute(servers...),
		},
		{
			name:  "a request pending for minutes points at the approver and explain",
			nodes: []corev1.Node{node("web-1")},
			csrs: func(t *testing.T) []certificatesv1.CertificateSigningRequest {
				return list(csr(t, "csr-p", "web-1", 5*time.Minute, []string{"10.0.0.1"}))
			},
			compute: openstacktest.NewCompute(servers...),
			want:    []want{{node: "web-1", kinds: []Kind{ServingCSRPending}, hint: []string{"stackward-approver explain csr-p"}}},
			counts:  [3]int{0, 1, 0},
		},
		{
			name:  "a request pending a few seconds is normal",
			nodes: []corev1.Node{node("web-1")},
			csrs: func(t *testing.T) []certificatesv1.CertificateSigningRequest {
				return list(csr(t, "csr-p", "web-1", 3*time.Second, []string{"10.0.0.1"}))
			},
			compute: openstacktest.NewCompute(servers...),
			want:    []want{{node: "web-1", kinds: []Kind{ServingCSRPending}, hint: []string{"Just requested"}}},
			counts:  [3]int{0, 1, 0},
		},
		{
			name:    "a cloud error is reported as an error, never as a missing server",
			nodes:   []corev1.Node{node("web-1", uninitialized)},
			compute: failing(errors.New("compute: 503 Service Unavailable")),
			want: []want{{node: "web-1", kinds: []Kind{NodeUninitialized}, hint: []string{"cloud lookup failed", "503"},
				cloud: func(v *CloudView) error {
					return expect(!v.NotFound && !v.Found && strings.Contains(v.Error, "503"), "got %+v", v)
				}}},
			counts: [3]int{1, 0, 0},
		},
		{
			name:  "a request approved minutes ago and never signed points at the signer",
			nodes: []corev1.Node{node("web-1")},
			csrs: func(t *testing.T) []certificatesv1.CertificateSigningRequest {
				return list(csr(t, "csr-u", "web-1", 10*time.Minute, nil, approved))
			},
			compute: openstacktest.NewCompute(servers...),
			want:    []want{{node: "web-1", kinds: []Kind{ServingCSRNotIssued}, hint: []string{"csrsigning"}}},
		},
		{
			name:  "a node that stopped posting status on a SHUTOFF server is told to start it",
			nodes: []corev1.Node{node("web-2", providerID("openstack:///"+id2), notReady)},
			compute: openstacktest.NewCompute(func() openstack.Server {
				s := server(id2, "web-2", "10.0.0.2")
				s.Status = openstack.StatusShutoff
				return s
			}()),
			want: []want{{node: "web-2", kinds: []Kind{NodeNotReady}, reason: "NodeStatusUnknown", hint: []string{"SHUTOFF"}}},
		},
		{
			name:  "without a cloud the hint asks for --cloud-config and nothing is looked up",
			nodes: []corev1.Node{node("web-1", uninitialized)},
			want: []want{{node: "web-1", kinds: []Kind{NodeUninitialized}, hint: []string{"--cloud-config"},
				cloud: func(v *CloudView) error { return expect(v == nil, "cloud view %+v without a cloud", v) }}},
			counts: [3]int{1, 0, 0},
		},
		{
			name:    "a providerID of another region is not looked up",
			nodes:   []corev1.Node{node("web-1", uninitialized, providerID("openstack://RegionTwo/"+id1))},
			compute: openstacktest.NewCompute(servers...),
			want: []want{{node: "web-1", kinds: []Kind{NodeUninitialized}, hint: []string{"region"},
				cloud: func(v *CloudView) error {
					return expect(!v.NotFound && strings.Contains(v.Error, "RegionTwo"), "got %+v", v)
				}}},
			counts: [3]int{1, 0, 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := Inputs{Nodes: tc.nodes, Now: now}
			if tc.csrs != nil {
				in.CSRs = tc.csrs(t)
			}
			if tc.compute != nil {
				in.Cloud = &Cloud{Compute: tc.compute, Region: "RegionOne"}
			}
			r := Diagnose(context.Background(), in)
			if got := [3]int{r.UninitializedNodes, r.PendingCSRs, r.DeniedCSRs}; got != tc.counts {
				t.Errorf("uninitialized nodes, pending, denied CSRs = %v, want %v", got, tc.counts)
			}
			if len(r.Problems) != len(tc.want) {
				t.Fatalf("got problems for %d nodes, want %d: %+v", len(r.Problems), len(tc.want), r.Problems)
			}
			for _, w := range tc.want {
				p := r.Problem(w.node)
				if p == nil {
					t.Fatalf("no problem reported for node %s: %+v", w.node, r.Problems)
				}
				var kinds []Kind
				for _, f := range p.Findings {
					kinds = append(kinds, f.Kind)
				}
				if fmt.Sprint(kinds) != fmt.Sprint(w.kinds) {
					t.Errorf("node %s: findings %v, want %v", w.node, kinds, w.kinds)
				}
				f := p.Findings[0]
				for _, s := range w.hint {
					if !strings.Contains(f.Hint, s) {
						t.Errorf("node %s: hint %q does not say %q", w.node, f.Hint, s)
					}
				}
				if w.reason != "" && f.Reason != w.reason {
					t.Errorf("node %s: reason %q, want %q", w.node, f.Reason, w.reason)
				}
				if w.requests != nil && fmt.Sprint(f.Requested) != fmt.Sprint(w.requests) {
					t.Errorf("node %s: requested %v, want %v", w.node, f.Requested, w.requests)
				}
				if f.Age == "" || f.Age == "unknown" {
					t.Errorf("node %s: age %q", w.node, f.Age)
				}
				if w.check != nil {
					if err := w.check(f); err != nil {
						t.Errorf("node %s: %v", w.node, err)
					}
				}
				if w.cloud != nil {
					if err := w.cloud(p.Cloud); err != nil {
						t.Errorf("node %s: cloud view: %v", w.node, err)
					}
				}
			}
		})
	}
}

func TestTheCloudIsAskedOncePerNodeWithFindingsOnly(t *testing.T) {
	compute := openstacktest.NewCompute(server("11111111-1111-1111-1111-111111111111", "web-1", "10.0.0.1"))
	var nodes []corev1.Node
	for i := range 20 {
		nodes = append(nodes, node(fmt.Sprintf("healthy-%d", i)))
	}
	nodes = append(nodes, node("web-1", uninitialized))
	csrs := list(csr(t, "csr-a", "web-1", 5*time.Minute, []string{"10.0.0.1"}), csr(t, "csr-b", "web-1", 4*time.Minute, []string{"10.0.0.1"}))
	r := Diagnose(context.Background(), Inputs{Nodes: nodes, CSRs: csrs, Cloud: &Cloud{Compute: compute}, Now: now})
	if r.Findings() != 3 || len(compute.Calls()) != 1 {
		t.Errorf("%d findings with %d cloud calls, want 3 findings (uninitialized, two pending) with 1 call", r.Findings(), len(compute.Calls()))
	}
}

func TestReportRendering(t *testing.T) {
	const id = "33333333-3333-3333-3333-333333333333"
	client := fake.NewSimpleClientset(
		ptr(node("web-3", uninitialized, nodeIP("10.0.0.2"))),
		ptr(node("web-1")),
		ptr(csr(t, "csr-3", "web-3", 2*time.Minute, []string{"10.0.0.2"},
			decided(certificatesv1.CertificateDenied, "IPNotOfInstance", "IP SAN 10.0.0.2 is not an address of instance "+id, time.Minute))),
	)
	cloud := &Cloud{Compute: openstacktest.NewCompute(server(id, "web-3", "10.0.0.3"), server("11111111-1111-1111-1111-111111111111", "web-1", "10.0.0.1"))}
	r, err := DiagnoseCluster(context.Background(), client, cloud, now)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("text names the node, the cloud's view, each finding's reason and what to do", func(t *testing.T) {
		var b bytes.Buffer
		if err := WriteText(&b, r); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, s := range []string{
			"Nodes: 2 (1 uninitialized, 0 not Ready); kubelet serving CSRs: 1 (0 pending, 1 denied)",
			"node web-3  --node-ip 10.0.0.2",
			`cloud:  server ` + id + ` "web-3" ACTIVE, m1.small in az-1; InternalIP 10.0.0.3, Hostname web-3`,
			"* not initialized by the cloud provider, for 10m",
			"* serving certificate request denied (csr-3), for 60s",
			"reason:  IPNotOfInstance: IP SAN 10.0.0.2",
			"asks:    DNS:web-3, IP:10.0.0.2",
			"do:      The kubelet asked for an IP the cloud does not give its server",
		} {
			if !strings.Contains(out, s) {
				t.Errorf("output lacks %q:\n%s", s, out)
			}
		}
		if strings.Contains(out, "node web-1") {
			t.Errorf("the healthy node web-1 is listed:\n%s", out)
		}
	})

	t.Run("JSON carries the same findings", func(t *testing.T) {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back Report
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		p := back.Problem("web-3")
		if p == nil || len(p.Findings) != 2 || p.Cloud == nil || p.Cloud.ServerID != id || p.Findings[1].CSR != "csr-3" {
			t.Errorf("round-tripped report: %s", b)
		}
	})

	t.Run("a cluster with nothing to fix says so", func(t *testing.T) {
		var b bytes.Buffer
		if err := WriteText(&b, &Report{Nodes: 3, Cloud: "asked"}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "No findings") {
			t.Errorf("output: %s", b.String())
		}
	})
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	err := (&Config{Output: "yaml"}).Validate()
	for _, s := range []string{"-o", "--timeout", "output writer"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("Validate() = %v, want it to mention %s", err, s)
		}
	}
}

func list(c ...certificatesv1.CertificateSigningRequest) []certificatesv1.CertificateSigningRequest {
	return c
}

func ptr[T any](v T) *T { return &v }

func expect(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}
