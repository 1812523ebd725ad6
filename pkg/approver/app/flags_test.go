package app

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
)

func TestFlagsFillTheConfig(t *testing.T) {
	f := newFlags()
	err := f.fs.Parse([]string{
		"--kubeconfig=/k", "--cloud-config=/c", "--dns-suffix=a.example", "--dns-suffix=b.example",
		"--max-expiration=720h", "--leave-pending-on-deny", "--subject-access-review", "--max-pending-per-node=5",
		"--cloud-qps=3", "--leader-elect=false", "--leader-elect-resource-namespace=ns", "--leader-elect-resource-name=lease",
		"--bind-address=192.0.2.7", "--secure-port=9443", "--authentication-kubeconfig=/a", "--kube-api-qps=50.5",
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.cfg
	if cfg.Kubeconfig != "/k" || cfg.CloudConfig != "/c" || !slices.Equal(cfg.DNSSuffixes, []string{"a.example", "b.example"}) ||
		cfg.MaxExpiration != 720*time.Hour || !cfg.LeavePendingOnDeny || !cfg.SubjectAccessReview || cfg.MaxPendingPerNode != 5 ||
		cfg.CloudQPS != 3 || cfg.LeaderElection.Enabled || cfg.LeaderElection.Namespace != "ns" || cfg.LeaderElection.LeaseName != "lease" ||
		cfg.Serving.SecureServing.BindAddress.String() != "192.0.2.7" || cfg.Serving.SecureServing.BindPort != 9443 ||
		cfg.Serving.Authentication.RemoteKubeConfigFile != "/a" || cfg.KubeAPIQPS != 50.5 {
		t.Errorf("config %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	// The old flag still works (the chart of the previous release uses it).
	f = newFlags()
	if err := f.fs.Parse([]string{"--metrics-bind-address=:9999"}); err != nil || f.cfg.MetricsBindAddress != ":9999" {
		t.Errorf("--metrics-bind-address: %v, %q", err, f.cfg.MetricsBindAddress)
	}
}

func TestDefaultsAreSafe(t *testing.T) {
	f := newFlags()
	if err := f.fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	cfg := f.cfg
	if !cfg.LeaderElection.Enabled || cfg.LeavePendingOnDeny || cfg.MaxPendingPerNode == 0 || cfg.CloudQPS == 0 {
		t.Errorf("defaults %+v", cfg)
	}
	if cfg.AllowAccessIPs || len(cfg.ServiceCIDRs) != 1 || cfg.ServiceCIDRs[0].String() != "10.96.0.0/12" {
		t.Errorf("access IPs allowed %v, Service CIDRs %v; want not allowed and kubeadm's 10.96.0.0/12", cfg.AllowAccessIPs, cfg.ServiceCIDRs)
	}
	if ss := cfg.Serving.SecureServing; ss.BindAddress.String() != "127.0.0.1" || ss.BindPort != 10263 || cfg.MetricsBindAddress != "" {
		t.Errorf("metrics and health on %s:%d (--metrics-bind-address %q) by default; want loopback:10263 (the pod has hostNetwork)",
			ss.BindAddress, ss.BindPort, cfg.MetricsBindAddress)
	}
	if a := cfg.Serving.Authorization.AlwaysAllowPaths; !slices.Contains(a, "/healthz") || !slices.Contains(a, "/readyz") || slices.Contains(a, "/metrics") {
		t.Errorf("paths allowed without authorization %v; want the probes' and not /metrics", a)
	}
	if cfg.KubeAPIQPS != 200 || cfg.KubeAPIBurst != 400 {
		t.Errorf("apiserver client %v QPS, burst %d; want the documented 200 and 400", cfg.KubeAPIQPS, cfg.KubeAPIBurst)
	}
}

// TestListFlagsSplitLikeTheCCM: every list flag is repeatable and
// comma-separated, and its first use replaces the default, as pflag's
// string slices (stackward-ccm's --dns-suffix) behave. One chart value
// feeds --dns-suffix to both containers: the two must read it alike.
func TestListFlagsSplitLikeTheCCM(t *testing.T) {
	tests := []struct {
		name string
		args []string
		get  func(f *flags) []string
		want []string
	}{
		{"a DNS suffix list given once is split at the commas", []string{"--dns-suffix=a.example,b.example"},
			func(f *flags) []string { return f.cfg.DNSSuffixes }, []string{"a.example", "b.example"}},
		{"repeated DNS suffixes add up", []string{"--dns-suffix=a.example", "--dns-suffix=b.example,c.example"},
			func(f *flags) []string { return f.cfg.DNSSuffixes }, []string{"a.example", "b.example", "c.example"}},
		{"trusted network IDs are split at the commas", []string{"--trusted-network-id=net-a,net-b", "--trusted-network-id=net-c"},
			func(f *flags) []string { return f.cfg.NetworkIDs }, []string{"net-a", "net-b", "net-c"}},
		{"a Service CIDR replaces the default, then adds up", []string{"--service-cidr=10.100.0.0/16,fd00:10::/108", "--service-cidr=10.200.0.0/16"},
			func(f *flags) []string { return strs(f.cfg.ServiceCIDRs) }, []string{"10.100.0.0/16", "fd00:10::/108", "10.200.0.0/16"}},
		{"the Service CIDR default stays without the flag", nil,
			func(f *flags) []string { return strs(f.cfg.ServiceCIDRs) }, []string{"10.96.0.0/12"}},
		{"control-plane endpoints are split and repeatable", []string{"--control-plane-endpoint=192.0.2.10", "--control-plane-endpoint=192.0.2.11,2001:db8::1"},
			func(f *flags) []string { return strs(f.cfg.ControlPlaneEndpoints) }, []string{"192.0.2.10", "192.0.2.11", "2001:db8::1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFlags()
			if err := f.fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if got := tt.get(f); !slices.Equal(got, tt.want) {
				t.Errorf("%v, want %v", got, tt.want)
			}
		})
	}
}

func strs[T interface{ String() string }](xs []T) []string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		out = append(out, x.String())
	}
	return out
}

func TestBadFlagValuesNameTheFlag(t *testing.T) {
	for _, arg := range []string{"--service-cidr=10.96.0.0", "--control-plane-endpoint=10.0.0.0/8", "--logging-format=xml"} {
		t.Run(arg, func(t *testing.T) {
			f := newFlags()
			f.fs.SetOutput(new(bytes.Buffer))
			err := f.fs.Parse([]string{arg})
			if err == nil {
				err = f.validateLogging()
			}
			name := strings.TrimPrefix(strings.SplitN(arg, "=", 2)[0], "--")
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s: %v, want an error naming %s", arg, err, name)
			}
		})
	}
}

// TestLoggingFormats: the approver logs text or JSON, as the CCM does.
func TestLoggingFormats(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format+" logging is accepted", func(t *testing.T) {
			f := newFlags()
			if err := f.fs.Parse([]string{"--logging-format=" + format, "-v=2"}); err != nil {
				t.Fatal(err)
			}
			if err := f.validateLogging(); err != nil {
				t.Errorf("--logging-format=%s: %v", format, err)
			}
		})
	}
	// Logging is applied once per process: this test is the one that does.
	t.Run("JSON logging writes one JSON object per line", func(t *testing.T) {
		f := newFlags()
		if err := f.fs.Parse([]string{"--logging-format=json"}); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := f.applyLogging(&logsapi.LoggingOptions{ErrorStream: &out, InfoStream: &out}); err != nil {
			t.Fatal(err)
		}
		klog.Background().WithName("stackward-approver").Info("Starting", "version", "test")
		klog.Flush()
		var line map[string]any
		if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &line); err != nil {
			t.Fatalf("log output %q is not one JSON object: %v", out.String(), err)
		}
		if line["msg"] != "Starting" || line["version"] != "test" || line["logger"] != "stackward-approver" {
			t.Errorf("log line %v, want msg Starting, version test, logger stackward-approver", line)
		}
	})
}

// TestHelpExplainsEveryFlag: each flag has a sentence for the operator.
func TestHelpExplainsEveryFlag(t *testing.T) {
	f := newFlags()
	var out bytes.Buffer
	f.fs.SetOutput(&out)
	f.fs.Usage()
	f.fs.VisitAll(func(fl *pflag.Flag) {
		if len(fl.Usage) < 20 {
			t.Errorf("--%s: usage %q says too little", fl.Name, fl.Usage)
		}
		if fl.Deprecated == "" && !strings.Contains(out.String(), "--"+fl.Name) {
			t.Errorf("--help does not list --%s", fl.Name)
		}
	})
	for _, want := range []string{"explain", "kubelet-serving", "pending", "json"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help does not mention %q", want)
		}
	}
	var stderr bytes.Buffer
	if code := ExitCode(Run(context.Background(), []string{"--help"}, Options{Stderr: &stderr})); code != 0 {
		t.Errorf("--help exits %d", code)
	}
	if !strings.Contains(stderr.String(), "--cloud-config") {
		t.Errorf("--help printed %q, want the flags", stderr.String())
	}
	if code := ExitCode(Run(context.Background(), []string{"--no-such-flag"}, Options{Stderr: new(bytes.Buffer)})); code != 2 {
		t.Errorf("a bad flag exits %d, want 2", code)
	}
}
