package approver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/pki"
	"github.com/stackward/stackward/pkg/version"
)

// Run runs the approver until ctx is done: it builds the clients, serves
// health and metrics, and decides CSRs while it holds the Lease (or always,
// without leader election). It returns nil after a clean shutdown.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration:\n%w", err)
	}
	client, dyn, err := newKubeClients(cfg)
	if err != nil {
		return err
	}
	if cfg.Dynamic == nil {
		cfg.Dynamic = dyn
	}
	// Delegated authentication and authorization ask the apiserver the
	// approver talks to, unless told otherwise (the CCM needs
	// --authentication-kubeconfig and --authorization-kubeconfig for that).
	if s := cfg.Serving; s != nil && cfg.Kubeconfig != "" {
		if s.Authentication.RemoteKubeConfigFile == "" {
			s.Authentication.RemoteKubeConfigFile = cfg.Kubeconfig
		}
		if s.Authorization.RemoteKubeConfigFile == "" {
			s.Authorization.RemoteKubeConfigFile = cfg.Kubeconfig
		}
	}
	return runWithClient(ctx, cfg, client, nil)
}

// runWithClient is Run on a given client; onListen, when set, learns the
// health server's address (tests listen on port 0).
func runWithClient(ctx context.Context, cfg Config, client kubernetes.Interface, onListen func(string)) error {
	logger := klog.FromContext(ctx)
	reg := prometheus.NewRegistry()
	var gatherer prometheus.Gatherer = reg
	if cfg.Registerer == nil {
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		cfg.Registerer = reg
	} else if g, ok := cfg.Registerer.(prometheus.Gatherer); ok {
		gatherer = g
	}
	if err := cfg.Registerer.Register(version.BuildInfo("stackward-approver")); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		return fmt.Errorf("register stackward_build_info: %w", err)
	}
	serving, err := applyMetricsBindAddress(cfg.Serving, cfg.MetricsBindAddress)
	if err != nil {
		return err
	}
	// Health first: building the cloud clients authenticates to Keystone,
	// which may take a while; the process is alive (not ready) meanwhile.
	ctx, cancel := context.WithCancel(ctx)
	var leading atomic.Bool
	var controller atomic.Pointer[Controller]
	// The leader's liveness fails when it has not renewed its Lease for
	// longer than this past the lease duration (a stuck process is
	// restarted), as in the CCM.
	watchdog := leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	var live []healthz.HealthChecker
	if cfg.LeaderElection.Enabled {
		live = append(live, watchdog)
	}
	ready := healthz.NamedCheck("csr-controller", func(*http.Request) error {
		c := controller.Load()
		switch {
		case c == nil:
			return errNotBuilt
		case cfg.LeaderElection.Enabled && !leading.Load():
			return nil // a standby replica is ready to take over
		case !c.HasSynced():
			return errors.New("CSR and Node caches not synced yet")
		}
		return nil
	})
	healthDone, err := serveHealth(ctx, serving, gatherer, live, []healthz.HealthChecker{ready}, onListen)
	if err != nil {
		cancel()
		return err
	}
	defer func() {
		cancel()
		<-healthDone
	}()

	cloud, err := buildCloud(ctx, &cfg, true)
	if err != nil {
		return err
	}
	if cfg.SignWithCADir != "" {
		// It reloads the CA when the mounted Secret changes (a rotation).
		signer, err := pki.NewReloadingSigner(cfg.SignWithCADir, cfg.ServingCertLifetime, cfg.Registerer, logger)
		if err != nil {
			return fmt.Errorf("--sign-with-ca-dir %s, --serving-cert-lifetime: %w", cfg.SignWithCADir, err)
		}
		cfg.Signer = signer
		ca := signer.CA().Cert
		logger.Info("Signing approved kubelet serving certificates", "ca", ca.Subject.CommonName, "caDir", cfg.SignWithCADir, "notAfter", ca.NotAfter)
	}
	c, err := NewController(client, cloud, cfg.Options)
	if err != nil {
		return err
	}
	controller.Store(c)

	run := c.Run
	if b := cfg.CABundle; b.Enabled() {
		if b.Dir == "" {
			b.Dir = cfg.SignWithCADir
		}
		if cfg.Dynamic == nil && b.ClusterTrustBundleName != "" {
			logger.Info("No dynamic client: publishing the kubelet-serving CA bundle as a ConfigMap only")
			b.ClusterTrustBundleName = ""
		}
		run = withCABundlePublisher(newCABundlePublisher(client, cfg.Dynamic, b), c.Run)
	}
	if !cfg.LeaderElection.Enabled {
		leading.Store(true)
		return run(ctx)
	}
	return runLeading(ctx, client, cfg.LeaderElection, watchdog, &leading, run, logger)
}

// withCABundlePublisher runs the publisher beside run, for as long as run
// runs (the leader's term), and waits for it to stop.
func withCABundlePublisher(p *caBundlePublisher, run func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.Run(ctx)
		}()
		err := run(ctx)
		cancel()
		<-done
		return err
	}
}

func newKubeClients(cfg Config) (kubernetes.Interface, dynamic.Interface, error) {
	rc := cfg.RESTConfig
	if rc == nil {
		var err error
		rc, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
		if err != nil {
			return nil, nil, fmt.Errorf("kubeconfig %q: %w", cfg.Kubeconfig, err)
		}
	}
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = DefaultKubeAPIQPS, DefaultKubeAPIBurst
	if cfg.KubeAPIQPS > 0 {
		rc.QPS = cfg.KubeAPIQPS
	}
	if cfg.KubeAPIBurst > 0 {
		rc.Burst = cfg.KubeAPIBurst
	}
	rc.UserAgent = "stackward-approver/" + version.Version
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	return client, dyn, nil
}

// runLeading decides CSRs only while this replica holds the Lease. Losing
// the Lease while ctx is still live is an error: the process exits and its
// restart competes again, with fresh caches.
//
// It is client-go's leader elector with a Lease lock, the very runner
// k8s.io/cloud-provider gives the CCM container next to it: the same
// semantics (release on cancel, renew deadline, the watchdog behind
// /healthz) and the same flags, without a second framework (a
// controller-runtime manager would bring its own client, cache, metrics
// registry and health server for one controller).
func runLeading(ctx context.Context, client kubernetes.Interface, le LeaderElection, watchdog *leaderelection.HealthzAdaptor, leading *atomic.Bool,
	run func(context.Context) error, logger klog.Logger) error {
	le.withDefaults()
	if le.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("leader election identity: %w", err)
		}
		le.Identity = host + "_" + uuid.NewString()
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, le.Namespace, le.LeaseName,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: le.Identity})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	runErr := make(chan error, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            le.LeaseName,
		WatchDog:        watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				logger.Info("Leading: deciding CSRs", "lease", le.Namespace+"/"+le.LeaseName, "identity", le.Identity)
				leading.Store(true)
				runErr <- run(ctx)
			},
			OnStoppedLeading: func() {
				leading.Store(false)
				logger.Info("Stopped leading", "lease", le.Namespace+"/"+le.LeaseName)
			},
			OnNewLeader: func(id string) {
				if id != le.Identity {
					logger.Info("Standing by", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	elector.Run(ctx)
	if ctx.Err() == nil {
		return errors.New("lost the leader election lease")
	}
	select {
	case err := <-runErr:
		return err
	case <-time.After(le.RenewDeadline):
		return nil // never led, or the controller is still draining
	}
}
