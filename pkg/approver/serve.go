package approver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	genericserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/mux"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"
)

// Serving is how the approver serves /healthz, /readyz and /metrics: the
// way stackward-ccm serves its port (k8s.io/apiserver's options and
// k8s.io/controller-manager's handler chain), so that one Prometheus
// configuration and one RBAC rule (get on the non-resource URL /metrics)
// scrape both containers. HTTPS with a self-signed certificate unless one is
// given; a bearer token is checked with a TokenReview, its right to the path
// with a SubjectAccessReview; /healthz and /readyz answer anyone (probes).
type Serving struct {
	SecureServing  *apiserveroptions.SecureServingOptions
	Authentication *apiserveroptions.DelegatingAuthenticationOptions
	Authorization  *apiserveroptions.DelegatingAuthorizationOptions
}

// Defaults of the serving flags.
const (
	// DefaultBindAddress is loopback: the chart's pod runs with
	// hostNetwork, and an address on all interfaces would be every
	// control-plane host's. The chart passes the pod's IP instead.
	DefaultBindAddress = "127.0.0.1"
	DefaultSecurePort  = 10263
)

// NewServing returns the defaults: 127.0.0.1:10263, an in-memory
// self-signed certificate, delegated authentication and authorization
// through the approver's own kubeconfig (or in-cluster account).
func NewServing() *Serving {
	s := &Serving{
		SecureServing:  apiserveroptions.NewSecureServingOptions(),
		Authentication: apiserveroptions.NewDelegatingAuthenticationOptions(),
		Authorization:  apiserveroptions.NewDelegatingAuthorizationOptions(),
	}
	s.SecureServing.BindAddress = netutils.ParseIPSloppy(DefaultBindAddress)
	s.SecureServing.BindPort = DefaultSecurePort
	// Empty directory: the self-signed pair is kept in memory (the pod's
	// file system is read-only).
	s.SecureServing.ServerCert.CertDirectory = ""
	s.SecureServing.ServerCert.PairName = "stackward-approver"
	// As in the CCM: outside a cluster, without a kubeconfig, only the
	// always-allowed paths answer.
	s.Authentication.RemoteKubeConfigFileOptional = true
	s.Authorization.RemoteKubeConfigFileOptional = true
	return s
}

// AddFlags adds the serving flags under the CCM's names (--bind-address,
// --secure-port, --tls-*, --authentication-*, --authorization-*).
func (s *Serving) AddFlags(fs *pflag.FlagSet) {
	s.SecureServing.AddFlags(fs)
	s.Authentication.AddFlags(fs)
	s.Authorization.AddFlags(fs)
}

// Validate reports every problem of the serving options.
func (s *Serving) Validate() []error {
	if s == nil {
		return nil
	}
	var errs []error
	errs = append(errs, s.SecureServing.Validate()...)
	errs = append(errs, s.Authentication.Validate()...)
	errs = append(errs, s.Authorization.Validate()...)
	return errs
}

// enabled reports whether anything is served: a port or a listener.
func (s *Serving) enabled() bool {
	return s != nil && (s.SecureServing.BindPort > 0 || s.SecureServing.Listener != nil)
}

// applyMetricsBindAddress applies the deprecated --metrics-bind-address
// (host:port; "0" serves nothing) over the serving options.
func applyMetricsBindAddress(s *Serving, addr string) (*Serving, error) {
	switch addr {
	case "":
		return s, nil
	case "0":
		return nil, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-bind-address %s: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return nil, fmt.Errorf("--metrics-bind-address %s: port %q is not a port number", addr, port)
	}
	if s == nil {
		s = NewServing()
	}
	if host == "" {
		host = "0.0.0.0"
	}
	ip := netutils.ParseIPSloppy(host)
	if ip == nil {
		return nil, fmt.Errorf("--metrics-bind-address %s: %q is not an IP address", addr, host)
	}
	s.SecureServing.BindAddress, s.SecureServing.BindPort = ip, p
	return s, nil
}

// healthServer is the approver's endpoint, ready to serve.
type healthServer struct {
	serving *genericserver.SecureServingInfo
	handler http.Handler
}

// newHealthServer prepares the endpoint: the listener is opened here, so a
// bad address fails Run at once. live and ready are the checks of /healthz
// and /readyz besides "ping".
func newHealthServer(s *Serving, gatherer prometheus.Gatherer, live, ready []healthz.HealthChecker) (*healthServer, error) {
	ss := s.SecureServing
	if err := ss.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("self-signed serving certificate: %w", err)
	}
	var info *genericserver.SecureServingInfo
	if err := ss.ApplyTo(&info); err != nil {
		return nil, fmt.Errorf("--bind-address %s, --secure-port %d: %w", ss.BindAddress, ss.BindPort, err)
	}
	var authn genericserver.AuthenticationInfo
	if err := s.Authentication.ApplyTo(&authn, info, nil); err != nil {
		_ = info.Listener.Close()
		return nil, fmt.Errorf("delegated authentication: %w", err)
	}
	var authz genericserver.AuthorizationInfo
	if err := s.Authorization.ApplyTo(&authz); err != nil {
		_ = info.Listener.Close()
		return nil, fmt.Errorf("delegated authorization: %w", err)
	}
	m := mux.NewPathRecorderMux("stackward-approver")
	healthz.InstallHandler(m, append([]healthz.HealthChecker{healthz.PingHealthz}, live...)...)
	healthz.InstallReadyzHandler(m, append([]healthz.HealthChecker{healthz.PingHealthz}, ready...)...)
	m.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	return &healthServer{serving: info, handler: genericcontrollermanager.BuildHandlerChain(m, &authz, &authn)}, nil
}

// start serves until ctx is done; the returned channel closes when the
// server has shut down.
func (h *healthServer) start(ctx context.Context, onListen func(string)) (<-chan struct{}, error) {
	logger := klog.FromContext(ctx)
	addr := h.serving.Listener.Addr().String()
	stopped, _, err := h.serving.Serve(h.handler, 5*time.Second, ctx.Done())
	if err != nil {
		return nil, fmt.Errorf("serve on %s: %w", addr, err)
	}
	logger.Info("Serving health and metrics (HTTPS, delegated authentication and authorization)", "address", addr)
	if onListen != nil {
		onListen(addr)
	}
	return stopped, nil
}

// serveHealth serves s until ctx is done (nothing when s serves nothing);
// the returned channel closes when the server has shut down.
func serveHealth(ctx context.Context, s *Serving, gatherer prometheus.Gatherer, live, ready []healthz.HealthChecker, onListen func(string)) (<-chan struct{}, error) {
	if !s.enabled() {
		done := make(chan struct{})
		close(done)
		return done, nil
	}
	h, err := newHealthServer(s, gatherer, live, ready)
	if err != nil {
		return nil, err
	}
	return h.start(ctx, onListen)
}

// errNotBuilt is /readyz before the clients exist.
var errNotBuilt = errors.New("starting: cloud and API clients not built yet")
