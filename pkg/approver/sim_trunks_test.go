package approver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	"github.com/stackward/stackward/internal/cloudsim"
)

// TestASubportAddressIsCertifiedAgainstTheSimulator: node-1's second
// network arrives on a VLAN subport of a trunk on its port. Its serving
// certificate may name the subport's address, not an address on no port
// of the server; a failing trunk listing leaves a request pending, never
// denied or approved without the subports.
func TestASubportAddressIsCertifiedAgainstTheSimulator(t *testing.T) {
	seed := cloudsim.DefaultSeed()
	seed.Networks = append(seed.Networks, cloudsim.SeedNetwork{Name: "storage", Subnets: []cloudsim.SeedSubnet{{CIDR: "192.168.50.0/24"}}})
	seed.Servers = []cloudsim.ServerSpec{
		{Name: "node-1", Flavor: "m1.small", NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: "10.0.0.11"}}},
		{Name: "node-2", Flavor: "m1.small", NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: "10.0.0.12"}}},
	}
	sim, err := cloudsim.New(cloudsim.Options{Seed: seed, RandSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	authURL, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	srv, _ := sim.ServerByName("node-1")
	if _, _, err := sim.AddSubport(srv.ID, "storage", "192.168.50.21", 100); err != nil {
		t.Fatal(err)
	}
	// node-2's subport: not node-1's to certify.
	other, _ := sim.ServerByName("node-2")
	if _, _, err := sim.AddSubport(other.ID, "storage", "192.168.50.22", 100); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "cloud.conf")
	if err := os.WriteFile(conf, []byte("[Global]\nauth-url="+authURL+"\nusername=demo\npassword=secret\ndomain-name=Default\ntenant-name=demo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(withNodesFor(
		node("node-1", "openstack:///"+srv.ID),
		makeCSR(t, csrSpec{name: "subport", node: "node-1", ips: []string{"10.0.0.11", "192.168.50.21"}, dns: []string{"node-1"}}),
		makeCSR(t, csrSpec{name: "no-port", node: "node-1", ips: []string{"10.0.0.11", "192.168.50.99"}}),
		makeCSR(t, csrSpec{name: "other-subport", node: "node-1", ips: []string{"10.0.0.11", "192.168.50.22"}}),
	)...)
	cfg := Config{Options: Options{RateLimiter: fastRetries(), WaitRecheck: 50 * time.Millisecond}, CloudConfig: conf, MetricsBindAddress: "0"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- runWithClient(ctx, cfg, client, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	if c := waitCondition(t, client, "subport"); c.Type != certificatesv1.CertificateApproved {
		t.Errorf("the node's fixed IP and its subport's 192.168.50.21: %+v, want Approved", c)
	}
	for _, name := range []string{"no-port", "other-subport"} {
		c := waitCondition(t, client, name)
		if c.Type != certificatesv1.CertificateDenied || c.Reason != ReasonIPNotOfInstance {
			t.Errorf("%s: %+v, want Denied/%s", name, c, ReasonIPNotOfInstance)
		}
	}

	// A trunk listing that fails leaves a subport request pending.
	if err := sim.SetFault(cloudsim.FaultRule{Service: "network", Operation: "trunks.list", Status: 500}); err != nil {
		t.Fatal(err)
	}
	renewal := makeCSR(t, csrSpec{name: "subport-renewal", node: "node-1", ips: []string{"10.0.0.11", "192.168.50.21"}})
	if _, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx, renewal, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, client, "subport-renewal", reasonCouldNotCheck)
	got, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, "subport-renewal", metav1.GetOptions{})
	if err != nil || len(got.Status.Conditions) != 0 {
		t.Fatalf("while trunks cannot be listed: %+v, %v; want pending", got.Status.Conditions, err)
	}
	sim.ClearFaults()
	if c := waitCondition(t, client, "subport-renewal"); c.Type != certificatesv1.CertificateApproved || !strings.Contains(c.Message, srv.ID) {
		t.Fatalf("after the trunk listing recovered: %+v, want Approved", c)
	}
}
