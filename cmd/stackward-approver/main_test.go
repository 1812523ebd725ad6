package main

import (
	"bytes"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFlagsFillTheConfig(t *testing.T) {
	fs, cfg := newFlags()
	err := fs.Parse([]string{
		"--kubeconfig=/k", "--cloud-config=/c", "--dns-suffix=a.example", "--dns-suffix=b.example",
		"--max-expiration=720h", "--leave-pending-on-deny", "--subject-access-review", "--max-pending-per-node=5",
		"--cloud-qps=3", "--leader-elect=false", "--leader-elect-resource-namespace=ns", "--leader-elect-resource-name=lease",
		"--metrics-bind-address=:9999",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Kubeconfig != "/k" || cfg.CloudConfig != "/c" || !slices.Equal(cfg.DNSSuffixes, []string{"a.example", "b.example"}) ||
		cfg.MaxExpiration != 720*time.Hour || !cfg.LeavePendingOnDeny || !cfg.SubjectAccessReview || cfg.MaxPendingPerNode != 5 ||
		cfg.CloudQPS != 3 || cfg.LeaderElection.Enabled || cfg.LeaderElection.Namespace != "ns" || cfg.LeaderElection.LeaseName != "lease" ||
		cfg.MetricsBindAddress != ":9999" {
		t.Errorf("config %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestDefaultsAreSafe(t *testing.T) {
	fs, cfg := newFlags()
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if !cfg.LeaderElection.Enabled || cfg.LeavePendingOnDeny || cfg.MaxPendingPerNode == 0 || cfg.CloudQPS == 0 {
		t.Errorf("defaults %+v", cfg)
	}
	if cfg.AllowAccessIPs || len(cfg.ServiceCIDRs) != 1 || cfg.ServiceCIDRs[0].String() != "10.96.0.0/12" {
		t.Errorf("access IPs allowed %v, Service CIDRs %v; want not allowed and kubeadm's 10.96.0.0/12", cfg.AllowAccessIPs, cfg.ServiceCIDRs)
	}
	if !strings.HasPrefix(cfg.MetricsBindAddress, "127.0.0.1:") {
		t.Errorf("metrics and health on %q by default; want loopback (hostNetwork, unauthenticated)", cfg.MetricsBindAddress)
	}
}

func TestAddressTrustFlags(t *testing.T) {
	fs, cfg := newFlags()
	err := fs.Parse([]string{"--allow-access-ips", "--service-cidr=10.100.0.0/16,fd00:10::/108", "--control-plane-endpoint=192.0.2.10",
		"--control-plane-endpoint=192.0.2.11,2001:db8::1", "--trusted-network-id=net-a", "--trusted-network-id=net-b"})
	if err != nil {
		t.Fatal(err)
	}
	var cidrs, eps []string
	for _, p := range cfg.ServiceCIDRs {
		cidrs = append(cidrs, p.String())
	}
	for _, a := range cfg.ControlPlaneEndpoints {
		eps = append(eps, a.String())
	}
	if !cfg.AllowAccessIPs || !slices.Equal(cidrs, []string{"10.100.0.0/16", "fd00:10::/108"}) ||
		!slices.Equal(eps, []string{"192.0.2.10", "192.0.2.11", "2001:db8::1"}) || !slices.Equal(cfg.NetworkIDs, []string{"net-a", "net-b"}) {
		t.Errorf("access %v, Service CIDRs %v (the default must be replaced), endpoints %v, networks %v", cfg.AllowAccessIPs, cidrs, eps, cfg.NetworkIDs)
	}
	fs, _ = newFlags()
	fs.SetOutput(new(bytes.Buffer))
	if err := fs.Parse([]string{"--service-cidr=10.96.0.0"}); err == nil || !strings.Contains(err.Error(), "service-cidr") {
		t.Errorf("a Service CIDR without a prefix length: %v, want an error naming the flag", err)
	}
}

// TestHelpExplainsEveryFlag: each flag has a sentence for the operator.
func TestHelpExplainsEveryFlag(t *testing.T) {
	fs, _ := newFlags()
	var out bytes.Buffer
	fs.SetOutput(&out)
	fs.Usage()
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Usage) < 20 {
			t.Errorf("--%s: usage %q says too little", f.Name, f.Usage)
		}
		if !strings.Contains(out.String(), "-"+f.Name) {
			t.Errorf("--help does not list --%s", f.Name)
		}
	})
	for _, want := range []string{"explain", "kubelet-serving", "pending"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help does not mention %q", want)
		}
	}
	if code := run([]string{"--help"}); code != 0 {
		t.Errorf("--help exits %d", code)
	}
	if code := run([]string{"--no-such-flag"}); code != 2 {
		t.Errorf("a bad flag exits %d, want 2", code)
	}
}
