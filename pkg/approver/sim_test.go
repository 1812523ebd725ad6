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

// TestAgainstTheSimulator runs the process path (cloud.conf → config.Load →
// openstack.NewClients → Nova) against stackward-cloudsim: the real
// gophercloud adapters and the shared address rules decide.
func TestAgainstTheSimulator(t *testing.T) {
	seed := cloudsim.DefaultSeed()
	seed.Servers = []cloudsim.ServerSpec{
		{Name: "node-1", Flavor: "m1.small", NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: "10.0.0.11", FloatingNetwork: "public"}}},
		{Name: "node-2", Flavor: "m1.small", NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: "10.0.0.12"}}},
		{Name: "node-3", Flavor: "m1.small", AccessIPv4: "203.0.113.30", NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: "10.0.0.13"}}},
		{Name: "node-4", Flavor: "m1.small", Status: "SHUTOFF", NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: "10.0.0.14"}}},
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
	ids, floating := map[string]string{}, ""
	for _, s := range sim.Servers() {
		ids[s.Name] = s.ID
		for _, a := range s.Addresses {
			if s.Name == "node-1" && a.Type == "floating" {
				floating = a.IP
			}
		}
	}
	if floating == "" {
		t.Fatal("the simulator gave node-1 no floating IP")
	}
	conf := filepath.Join(t.TempDir(), "cloud.conf")
	if err := os.WriteFile(conf, []byte("[Global]\nauth-url="+authURL+"\nusername=demo\npassword=secret\ndomain-name=Default\ntenant-name=demo\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	client := fake.NewClientset(withNodesFor(
		node("node-1", "openstack:///"+ids["node-1"]),
		makeCSR(t, csrSpec{name: "node-1-serving", node: "node-1", ips: []string{"10.0.0.11", floating}, dns: []string{"node-1"}}),
		makeCSR(t, csrSpec{name: "node-1-steals", node: "node-1", ips: []string{"10.0.0.11", "10.0.0.12"}}),
		makeCSR(t, csrSpec{name: "node-2-early", node: "node-2", ips: []string{"10.0.0.12"}}),
		makeCSR(t, csrSpec{name: "node-3-access-ip", node: "node-3", ips: []string{"10.0.0.13", "203.0.113.30"}}),
		makeCSR(t, csrSpec{name: "node-4-shutoff", node: "node-4", ips: []string{"10.0.0.14"}}),
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

	if c := waitCondition(t, client, "node-1-serving"); c.Type != certificatesv1.CertificateApproved || !strings.Contains(c.Message, ids["node-1"]) {
		t.Errorf("node-1-serving: %+v, want Approved against %s", c, ids["node-1"])
	}
	if c := waitCondition(t, client, "node-1-steals"); c.Type != certificatesv1.CertificateDenied || c.Reason != ReasonIPNotOfInstance || !strings.Contains(c.Message, "10.0.0.12") {
		t.Errorf("node-1-steals: %+v, want Denied/%s", c, ReasonIPNotOfInstance)
	}
	if c := waitCondition(t, client, "node-2-early"); c.Type != certificatesv1.CertificateApproved {
		t.Errorf("node-2-early: %+v, want Approved by name before its Node exists", c)
	}

	if c := waitCondition(t, client, "node-3-access-ip"); c.Type != certificatesv1.CertificateDenied || c.Reason != ReasonUntrustedAddress || !strings.Contains(c.Message, "203.0.113.30") {
		t.Errorf("node-3-access-ip: %+v, want Denied/%s naming the access IP", c, ReasonUntrustedAddress)
	}
	waitEvent(t, client, "node-4-shutoff", ReasonInstanceNotRunning)
	if err := sim.SetServerStatus(ids["node-4"], "ACTIVE"); err != nil {
		t.Fatal(err)
	}
	if c := waitCondition(t, client, "node-4-shutoff"); c.Type != certificatesv1.CertificateApproved {
		t.Errorf("node-4-shutoff after start: %+v, want Approved", c)
	}

	// A Nova outage leaves a new request pending; it is approved after.
	if err := sim.SetFault(cloudsim.FaultRule{Service: "compute", Status: 503}); err != nil {
		t.Fatal(err)
	}
	renewal := makeCSR(t, csrSpec{name: "node-1-renewal", node: "node-1", ips: []string{"10.0.0.11"}})
	if _, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx, renewal, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, client, "node-1-renewal", reasonCouldNotCheck)
	got, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, "node-1-renewal", metav1.GetOptions{})
	if err != nil || len(got.Status.Conditions) != 0 {
		t.Fatalf("during the outage: %+v, %v; want pending", got.Status.Conditions, err)
	}
	sim.ClearFaults()
	if c := waitCondition(t, client, "node-1-renewal"); c.Type != certificatesv1.CertificateApproved {
		t.Fatalf("after the outage: %+v, want Approved", c)
	}
}
