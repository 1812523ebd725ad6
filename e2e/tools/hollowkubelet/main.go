// Command hollow-kubelet runs the real kubelet code (k8s.io/kubernetes/pkg/kubemark)
// over a fake container runtime, cAdvisor and mounter, configured the way a
// node of an external-cloud-provider cluster is: it TLS-bootstraps its client
// certificate with a bootstrap token, registers with --cloud-provider=external
// (and so with the uninitialized taint), and asks for its serving certificate
// through a kubernetes.io/kubelet-serving CSR (serverTLSBootstrap) which it then
// serves on --node-ip:--port. Its node reports this process's own CPU and
// memory use as the node's (usage.go), so resource metrics are served.
//
// The e2e lab runs one process per simulated node, each on its own 198.18.x.y
// address inside the lab's network namespace.
//
// This file builds against every kubelet minor the lab runs: the 1.37 tools
// module here and, through a symlink, the older-kubelet module in
// ../kubelet134. What differs between minors lives in runtime.go of each.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"k8s.io/klog/v2"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/pkg/kubelet/certificate/bootstrap"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubemark"
)

type config struct {
	nodeName            string
	nodeIP              string
	port                int
	providerID          string
	cloudProvider       string
	kubeconfig          string
	bootstrapKubeconfig string
	certDir             string
	rootDir             string
	statusUpdate        time.Duration
	leaseDuration       time.Duration
	serverTLSBootstrap  bool
}

func main() {
	klog.InitFlags(nil)
	var c config
	flag.StringVar(&c.nodeName, "name", "", "Node name to register (required).")
	flag.StringVar(&c.nodeIP, "node-ip", "", "The node's IP, or its IPv4 and IPv6 comma-separated (a dual-stack node): the kubelet reports them and serves on the first (required).")
	flag.IntVar(&c.port, "port", 10250, "Port the kubelet serves its TLS API on.")
	flag.StringVar(&c.providerID, "provider-id", "", "Optional providerID; empty leaves it to the cloud-controller-manager.")
	flag.StringVar(&c.cloudProvider, "cloud-provider", "external", "Cloud provider: \"external\" or empty.")
	flag.StringVar(&c.kubeconfig, "kubeconfig", "", "Path the kubelet's client kubeconfig is written to and read from (required).")
	flag.StringVar(&c.bootstrapKubeconfig, "bootstrap-kubeconfig", "", "Bootstrap-token kubeconfig used to obtain the client certificate when --kubeconfig does not exist yet.")
	flag.StringVar(&c.certDir, "cert-dir", "", "Directory for client and serving certificates (default <root-dir>/pki).")
	flag.StringVar(&c.rootDir, "root-dir", "", "Kubelet root directory (required).")
	flag.DurationVar(&c.statusUpdate, "node-status-update-frequency", 10*time.Second, "How often the kubelet posts node status.")
	flag.DurationVar(&c.leaseDuration, "node-lease-duration", 0, "Duration of the node's Lease in kube-node-lease, renewed every quarter of it (whole seconds; default 4 x --node-status-update-frequency, so the Lease is renewed as often as the status is checked, as with a default kubelet).")
	flag.BoolVar(&c.serverTLSBootstrap, "server-tls-bootstrap", true, "Request the serving certificate from the certificates API (serverTLSBootstrap).")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "hollow-kubelet:", err)
		os.Exit(1)
	}
}

// bootstrapAttempts and bootstrapPause bound how often a failed TLS
// bootstrap is tried again.
const (
	bootstrapAttempts = 6
	bootstrapPause    = 5 * time.Second
)

// bootstrapClientCert is the kubelet's TLS bootstrap, tried again after a
// failure the way systemd restarts a kubelet that exits (kubeadm's unit:
// Restart=always): a CSR create that a loaded apiserver answers with
// "etcdserver: request timed out" delays the node's join, as on a real
// host, rather than ending it.
func bootstrapClientCert(ctx context.Context, c config) error {
	var err error
	for attempt := 1; attempt <= bootstrapAttempts; attempt++ {
		if err = bootstrap.LoadClientCert(ctx, c.kubeconfig, c.bootstrapKubeconfig, c.certDir, types.NodeName(c.nodeName)); err == nil {
			return nil
		}
		klog.ErrorS(err, "TLS bootstrap failed", "attempt", attempt, "of", bootstrapAttempts)
		if attempt == bootstrapAttempts {
			break
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(bootstrapPause):
		}
	}
	return err
}

func run(ctx context.Context, c config) error {
	if c.nodeName == "" || c.nodeIP == "" || c.kubeconfig == "" || c.rootDir == "" {
		return errors.New("--name, --node-ip, --kubeconfig and --root-dir are required")
	}
	if c.certDir == "" {
		c.certDir = filepath.Join(c.rootDir, "pki")
	}
	for _, d := range []string{c.rootDir, c.certDir, filepath.Join(c.rootDir, "static-pods"), filepath.Join(c.rootDir, "pod-logs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if c.bootstrapKubeconfig != "" {
		if err := bootstrapClientCert(ctx, c); err != nil {
			return fmt.Errorf("bootstrap client certificate: %w", err)
		}
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", c.kubeconfig, err)
	}
	restConfig.UserAgent = "hollow-kubelet"
	client, err := clientset.NewForConfig(restConfig)
	if err != nil {
		return err
	}

	flags, kc := kubemark.GetHollowKubeletConfig(&kubemark.HollowKubeletOptions{
		NodeName:    c.nodeName,
		KubeletPort: c.port,
		MaxPods:     110,
		NodeLabels:  map[string]string{},
	})
	// kubemark made itself a temporary root; we bring our own.
	if err := os.RemoveAll(flags.RootDirectory); err != nil {
		return err
	}
	flags.RootDirectory = c.rootDir
	flags.CertDirectory = c.certDir
	flags.NodeIP = c.nodeIP
	flags.CloudProvider = c.cloudProvider
	kc.StaticPodPath = filepath.Join(c.rootDir, "static-pods")
	kc.PodLogsDir = filepath.Join(c.rootDir, "pod-logs")
	kc.ProviderID = c.providerID
	kc.Address, _, _ = strings.Cut(c.nodeIP, ",")
	kc.ReadOnlyPort = 0
	kc.HealthzPort = 0
	kc.ServerTLSBootstrap = c.serverTLSBootstrap
	kc.RotateCertificates = true
	kc.NodeStatusUpdateFrequency.Duration = c.statusUpdate
	// The kubelet posts its status only when it changes (or every
	// NodeStatusReportFrequency, 5 min in kubemark) and otherwise heartbeats
	// through its Lease, renewed every quarter of the lease duration. With
	// the default 40 s that is every 10 s: longer than a short
	// node-monitor-grace-period (the lab's is 8 s), so the node lifecycle
	// controller would mark every Node Ready=Unknown between renewals until
	// the kubelet posts True again: Nodes that flap.
	lease := c.leaseDuration
	if lease == 0 {
		lease = 4 * c.statusUpdate
	}
	if lease < time.Second || lease%time.Second != 0 {
		return fmt.Errorf("--node-lease-duration %s: want whole seconds, at least 1s", lease)
	}
	kc.NodeLeaseDurationSeconds = int32(lease / time.Second)
	kc.RegisterWithTaints = nil

	heartbeatConfig := *restConfig
	heartbeatConfig.Timeout = c.statusUpdate
	heartbeatConfig.QPS = -1
	heartbeatClient, err := clientset.NewForConfig(&heartbeatConfig)
	if err != nil {
		return err
	}

	endpoint, err := fakeremote.GenerateEndpoint()
	if err != nil {
		return fmt.Errorf("fake runtime endpoint: %w", err)
	}
	runtime := fakeremote.NewFakeRemoteRuntime()
	if err := runtime.Start(endpoint); err != nil {
		return fmt.Errorf("start fake runtime: %w", err)
	}
	defer runtime.Stop()
	runtimeService, err := newRuntimeService(ctx, endpoint)
	if err != nil {
		return fmt.Errorf("runtime service: %w", err)
	}

	hollow := kubemark.NewHollowKubelet(flags, kc, client, heartbeatClient,
		newProcessCadvisor(c.nodeName),
		runtime.ImageService, runtimeService, cm.NewStubContainerManager())

	// kubemark leaves TLSOptions nil, which disables the serving-certificate
	// manager; build them the way the kubelet binary does.
	tlsOptions, err := kubeletapp.InitializeTLS(ctx, flags, kc)
	if err != nil {
		return fmt.Errorf("initialize TLS: %w", err)
	}
	hollow.KubeletDeps.TLSOptions = tlsOptions

	go hollow.Run(ctx)
	<-ctx.Done()
	klog.InfoS("hollow-kubelet stopping", "node", c.nodeName)
	return nil
}
