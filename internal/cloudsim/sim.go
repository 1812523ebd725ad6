package cloudsim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Service names, as they appear in the Keystone catalog, in fault rules and
// in call counter keys.
const (
	ServiceIdentity     = "identity"
	ServiceCompute      = "compute"
	ServiceNetwork      = "network"
	ServiceLoadBalancer = "load-balancer"
	ServiceMetadata     = "metadata"
	ServiceImage        = "image"
	ServiceKeyManager   = "key-manager"
)

// URL path prefixes of the services on the simulator's listener. Keystone is
// at the root so that "http://host:port/" and "http://host:port/v3" both work
// as auth URLs; the metadata service is at the root too, as on 169.254.169.254.
const (
	computePrefix = "/compute"
	networkPrefix = "/networking"
	lbPrefix      = "/load-balancer"
	imagePrefix   = "/image"
)

// Options configures a simulator.
type Options struct {
	// Seed is the initial cloud. Nil gives a minimal cloud (DefaultSeed).
	Seed *Seed
	// TokenTTL is the lifetime of issued tokens; 0 means one hour.
	TokenTTL time.Duration
	// OctaviaDelay is how long Octavia objects stay PENDING_* before they
	// become ACTIVE (or ERROR); 0 means they settle right after the response.
	OctaviaDelay time.Duration
	// BuildDelay is how long a server created through the Nova API stays
	// BUILD before it becomes ACTIVE.
	BuildDelay time.Duration
	// Latency is added to every OpenStack API call, to model a remote cloud.
	Latency time.Duration
	// Region is the catalog region; empty means "RegionOne".
	Region string
	// Registry receives the simulator's metrics. Nil means a private registry,
	// served at /metrics.
	Registry prometheus.Registerer
	// RandSeed makes fault error rates reproducible; 0 means random.
	RandSeed uint64
	// WithoutServices are catalog service types left out of the catalog
	// (e.g. ServiceLoadBalancer: a cloud without Octavia); their APIs
	// still answer at their paths for whoever knows them.
	WithoutServices []string
}

// Sim is a running simulated cloud. All methods are safe for concurrent use.
type Sim struct {
	opts    Options
	region  string
	handler http.Handler

	mu    sync.RWMutex
	state *state

	faultMu sync.Mutex
	faults  []*faultState
	rng     *rand.Rand
	latency time.Duration

	callMu  sync.Mutex
	calls   map[string]int
	metrics *prometheus.CounterVec
	promReg *prometheus.Registry // non-nil when the registry is our own

	// hangCtx is cancelled on Close so that hung requests finish.
	hangCtx    context.Context
	hangCancel context.CancelFunc
}

// New builds a simulator from opts. It fails when the seed is inconsistent
// (an unknown flavor, network or project) or the registry refuses the metrics.
func New(opts Options) (*Sim, error) {
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = time.Hour
	}
	s := &Sim{opts: opts, region: opts.Region, latency: opts.Latency, calls: map[string]int{}}
	if s.region == "" {
		s.region = "RegionOne"
	}
	seed := uint64(time.Now().UnixNano())
	if opts.RandSeed != 0 {
		seed = opts.RandSeed
	}
	s.rng = rand.New(rand.NewPCG(seed, seed^0x5eed))
	s.hangCtx, s.hangCancel = context.WithCancel(context.Background())

	s.metrics = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stackward_cloudsim_requests_total",
		Help: "OpenStack API requests served by the simulator, by service, operation and HTTP status code.",
	}, []string{"service", "operation", "code"})
	reg := opts.Registry
	if reg == nil {
		s.promReg = prometheus.NewRegistry()
		reg = s.promReg
	}
	if err := reg.Register(s.metrics); err != nil {
		return nil, fmt.Errorf("register cloudsim metrics: %w", err)
	}

	sd := opts.Seed
	if sd == nil {
		sd = DefaultSeed()
	}
	st, err := newState(sd, s.region)
	if err != nil {
		return nil, err
	}
	s.state = st
	s.handler = s.buildMux()
	return s, nil
}

// Handler returns the simulator's HTTP handler: every OpenStack API, the
// metadata service, /admin/ and (with a private registry) /metrics.
func (s *Sim) Handler() http.Handler { return s.handler }

// Serve serves the simulator on ln until ln is closed.
func (s *Sim) Serve(ln net.Listener) error {
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Start listens on addr ("127.0.0.1:0" when empty) and serves in the
// background. It returns the Keystone auth URL and a stop function that shuts
// the server down, releasing hung requests.
func (s *Sim) Start(addr string) (authURL string, stop func(), err error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("cloudsim listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	stop = func() {
		s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
	return "http://" + ln.Addr().String() + "/v3", stop, nil
}

// Close releases requests held by Hang faults and stops Octavia timers.
func (s *Sim) Close() {
	s.hangCancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state.closed = true
}

// Gatherer returns the simulator's private metrics registry, or nil when
// Options.Registry was given.
func (s *Sim) Gatherer() prometheus.Gatherer {
	if s.promReg == nil {
		return nil
	}
	return s.promReg
}

// SetLatency changes the latency added to every OpenStack API call.
func (s *Sim) SetLatency(d time.Duration) {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	s.latency = d
}

// op describes one API operation for counters, faults and authentication.
type op struct {
	service   string
	name      string
	anonymous bool // no token needed (version documents, auth, metadata)
}

// handle registers h under pattern with the counting, fault and auth layers.
func (s *Sim) handle(mux *http.ServeMux, pattern string, o op, h http.HandlerFunc) {
	mux.Handle(pattern, s.wrap(o, h))
}

func (s *Sim) buildMux() http.Handler {
	mux := http.NewServeMux()
	s.routesIdentity(mux)
	s.routesVersions(mux)
	s.routesCompute(mux)
	s.routesNetwork(mux)
	s.routesLoadBalancer(mux)
	s.routesImage(mux)
	s.routesKeyManager(mux)
	s.routesMetadata(mux)
	s.routesAdmin(mux)
	if s.promReg != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.promReg, promhttp.HandlerOpts{}))
	}
	return mux
}

// statusRecorder remembers the status code for the metrics.
type statusRecorder struct {
	http.ResponseWriter
	code    int
	dropped bool // a Drop fault closed the connection unanswered
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (s *Sim) wrap(o op, h http.HandlerFunc) http.Handler {
	key := o.service + "." + o.name
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		rec.Header().Set("X-Openstack-Request-Id", "req-"+newID())
		s.callMu.Lock()
		s.calls[key]++
		s.callMu.Unlock()
		defer func() {
			code := fmt.Sprint(rec.code)
			switch {
			case rec.dropped:
				code = "dropped"
			case rec.code == 0:
				code = fmt.Sprint(http.StatusOK)
			}
			s.metrics.WithLabelValues(o.service, o.name, code).Inc()
		}()
		if !s.applyFaults(rec, r, o) {
			return
		}
		if !o.anonymous {
			tok, ok := s.checkToken(r.Header.Get("X-Auth-Token"))
			if !ok {
				writeAuthError(rec, r)
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), tokenKey{}, tok))
			if !authorize(rec, r, o) {
				return
			}
		}
		h(rec, r)
	})
}

type tokenKey struct{}

// tokenFrom returns the validated token of an authenticated request.
func tokenFrom(r *http.Request) *token {
	t, _ := r.Context().Value(tokenKey{}).(*token)
	return t
}

// Calls returns how many requests each operation received, keyed
// "service.operation" (e.g. "compute.servers.detail").
func (s *Sim) Calls() map[string]int {
	s.callMu.Lock()
	defer s.callMu.Unlock()
	out := make(map[string]int, len(s.calls))
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

// ResetCalls zeroes the call counters (not the Prometheus counters, which
// only ever grow).
func (s *Sim) ResetCalls() {
	s.callMu.Lock()
	defer s.callMu.Unlock()
	s.calls = map[string]int{}
}

// baseURL is the scheme and host the client used to reach us, so catalogs and
// links point back at whatever address the simulator is reached on.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p != "" {
		scheme = p
	}
	return scheme + "://" + strings.TrimSuffix(r.Host, "/")
}
