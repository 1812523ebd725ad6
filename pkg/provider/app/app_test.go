package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/cloud-provider/names"
	_ "k8s.io/component-base/logs/json/register" // as main registers it
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
	"github.com/stackward/stackward/pkg/provider"
)

// run executes the command as main would, capturing its output.
func run(t *testing.T, opts Options, args ...string) (string, error) {
	t.Helper()
	cmd, err := NewCommand(context.Background(), opts)
	if err != nil {
		t.Fatalf("NewCommand: %v", err)
	}
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), err
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cloud.conf")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestHelpExplainsTheCommand(t *testing.T) {
	out, err := run(t, Options{}, "--help")
	if err != nil {
		t.Fatalf("--help: %v", err)
	}
	for _, want := range []string{
		"stackward-ccm is the OpenStack cloud-controller-manager",
		"cloud-node-lifecycle",
		"--cloud-config",
		"--cloud-provider string", // the app's flags are there...
		`(default "openstack")`,   // ...with this provider as the default
		"--leader-elect",
		"--provider-id-with-region", // and the provider's own
		"--server-cache-ttl",
		"--node-cidr-mask-size int", "--node-cidr-mask-size-ipv4 int", "--node-cidr-mask-size-ipv6 int",
		"/metrics",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--help does not mention %q", want)
		}
	}
}

func TestVersionPrintsStackwardsVersion(t *testing.T) {
	cmd, err := NewCommand(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// --version is a process-wide flag of component-base: put it back.
	t.Cleanup(func() { _ = cmd.Flags().Set("version", "false") })
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--version"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("--version: %v", err)
	}
	if !strings.HasPrefix(out.String(), "stackward-ccm dev") {
		t.Fatalf("--version printed %q, want stackward-ccm's version", out.String())
	}
}

func TestStartupFailsWithAReason(t *testing.T) {
	valid := writeFile(t, "[Global]\nauth-url = https://keystone.example:5000/v3\nusername = u\npassword = p\ntenant-name = demo\ndomain-name = Default\nregion = RegionOne\n")
	invalid := writeFile(t, "[Global]\ntls-insecure = maybe\n[Networking]\nipv6-support-disabled = perhaps\n")
	noClients := func(context.Context, *config.Config, openstack.ClientOptions) (*openstack.Clients, error) {
		return nil, errors.New("keystone said 401")
	}
	tests := []struct {
		name    string
		opts    Options
		args    []string
		wantErr []string
	}{
		{name: "no --cloud-config is an error", wantErr: []string{"--cloud-config is required"}},
		{name: "another --cloud-provider is an error", args: []string{"--cloud-provider=aws", "--cloud-config=" + valid}, wantErr: []string{`only provides "openstack"`}},
		{name: "a missing cloud config file is an error", args: []string{"--cloud-config=/nonexistent/cloud.conf"}, wantErr: []string{"/nonexistent/cloud.conf"}},
		{name: "an invalid cloud config names the file and every problem", args: []string{"--cloud-config=" + invalid}, wantErr: []string{invalid, "tls-insecure", "ipv6-support-disabled"}},
		{name: "failing to log in to the cloud is an error", opts: Options{NewClients: noClients}, args: []string{"--cloud-config=" + valid}, wantErr: []string{"openstack clients", "keystone said 401"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, tt.opts, tt.args...)
			if err == nil {
				t.Fatal("command succeeded, want an error")
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestNewCloudHandsTheRegistryToTheClients(t *testing.T) {
	path := writeFile(t, "[Global]\nauth-url = https://keystone.example:5000/v3\nusername = u\npassword = p\ntenant-name = demo\ndomain-name = Default\nregion = RegionOne\n")
	reg := prometheus.NewRegistry()
	var got openstack.ClientOptions
	var gotRegion string
	opts := Options{
		Registerer: reg,
		NewClients: func(_ context.Context, cfg *config.Config, o openstack.ClientOptions) (*openstack.Clients, error) {
			got, gotRegion = o, cfg.Global.Region
			return &openstack.Clients{Compute: openstack.NewServerCache(nil, 0)}, nil
		},
	}
	cloud, err := newCloud(context.Background(), "openstack", path, provider.Options{}, opts, regionalChoice{})
	if err != nil {
		t.Fatalf("newCloud: %v", err)
	}
	if got.Registerer != reg || gotRegion != "RegionOne" || !strings.HasPrefix(got.UserAgent, "stackward-ccm/") {
		t.Errorf("clients built with %+v for region %q, want the given registry, region RegionOne and a stackward-ccm user agent", got, gotRegion)
	}
	if cloud.ProviderName() != "openstack" {
		t.Errorf("ProviderName = %q", cloud.ProviderName())
	}
	if n, err := testutil.GatherAndCount(reg, "stackward_build_info"); err != nil || n != 1 {
		t.Errorf("stackward_build_info on the given registry: %d series, %v; want 1", n, err)
	}
}

// TestSecurePortDefaultsToLoopback: the CCM pod has hostNetwork, so
// k8s.io/cloud-provider's 0.0.0.0 would be every interface of the
// control-plane host.
func TestSecurePortDefaultsToLoopback(t *testing.T) {
	cmd, err := NewCommand(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := cmd.Flags().Lookup("bind-address"); f == nil || f.DefValue != "127.0.0.1" {
		t.Errorf("--bind-address %+v, want the default 127.0.0.1", f)
	}
	if f := cmd.Flags().Lookup("secure-port"); f == nil || f.DefValue != "10258" {
		t.Errorf("--secure-port %+v, want the default 10258", f)
	}
}

// TestNoCertificateIsGeneratedForTheUnusedWebhookServer: Stackward serves no
// webhooks; a self-signed certificate for them would only delay every start
// (and every node waiting for it) by the RSA key generation.
func TestNoCertificateIsGeneratedForTheUnusedWebhookServer(t *testing.T) {
	s, err := newControllerManagerOptions()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WebhookServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, nil); err != nil {
		t.Fatal(err)
	}
	if s.WebhookServing.ServerCert.GeneratedCert != nil {
		t.Error("a self-signed certificate was generated for the webhook server, which Stackward never runs")
	}
	cmd, err := NewCommand(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := cmd.Flags().Lookup("webhook-secure-port"); f == nil || f.DefValue != "0" {
		t.Errorf("--webhook-secure-port %+v, want the default 0 (no webhook server)", f)
	}
}

// TestWorkqueueMetricsAreServed: the controllers' queues report to the
// registry the secure port's /metrics serves (k8s.io/controller-manager
// installs the workqueue metrics provider in this binary).
func TestWorkqueueMetricsAreServed(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "stackward-test-queue"})
	defer q.ShutDown()
	q.Add("a")
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "workqueue_adds_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == "stackward-test-queue" && m.GetCounter().GetValue() == 1 {
					return
				}
			}
		}
	}
	t.Error(`workqueue_adds_total{name="stackward-test-queue"} 1 is not on the legacy registry /metrics serves`)
}

func TestControllersAreNodeLifecycleServiceAndRoute(t *testing.T) {
	got := controllerInitializers()
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{names.CloudNodeController, names.CloudNodeLifecycleController, names.NodeRouteController, names.ServiceLBController}
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("controllers = %v, want %v", keys, want)
	}
	for name, c := range got {
		if c.Constructor == nil {
			t.Errorf("controller %s has no constructor", name)
		}
	}
	aliases := controllerAliases(got)
	if aliases["cloud-node"] != names.CloudNodeController || aliases["cloud-node-lifecycle"] != names.CloudNodeLifecycleController ||
		aliases["service"] != names.ServiceLBController || aliases["route"] != names.NodeRouteController || len(aliases) != 4 {
		t.Errorf("aliases = %v, want cloud-node, cloud-node-lifecycle, service and route", aliases)
	}
}

// TestLoggingFormats: --logging-format=json is a known format (main
// registers it; so does this test binary, below). The command applies the
// logging flags and only then fails for want of a kubeconfig ("no configuration"); an unknown
// format fails first.
func TestLoggingFormats(t *testing.T) {
	path := writeFile(t, "[Global]\nauth-url = https://keystone.example:5000/v3\nusername = u\npassword = p\ntenant-name = demo\ndomain-name = Default\nregion = RegionOne\n")
	fakeClients := Options{NewClients: func(context.Context, *config.Config, openstack.ClientOptions) (*openstack.Clients, error) {
		return &openstack.Clients{Compute: openstack.NewServerCache(nil, 0)}, nil
	}}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	tests := []struct {
		name, format, wantErr, notErr string
	}{
		{"an unknown format is refused", "xml", `"xml"`, ""},
		// Applied for the rest of this test binary: the last case.
		{"JSON logging is accepted", "json", "no configuration has been provided", "format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, fakeClients, "--logging-format="+tt.format, "--cloud-config="+path, "--secure-port=0", "--leader-elect=false")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || (tt.notErr != "" && strings.Contains(err.Error(), tt.notErr)) {
				t.Errorf("--logging-format=%s: error %v, want one mentioning %s (not %q)", tt.format, err, tt.wantErr, tt.notErr)
			}
		})
	}
}
