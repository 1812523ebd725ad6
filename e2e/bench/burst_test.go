//go:build e2e && bench

package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/certificate/csr"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/approver"
)

// burstCSRs is the size of the join burst: serving CSRs from that many
// nodes, burstSenders of them asking at any moment.
const (
	burstCSRs    = 1000
	burstSenders = 64
)

// burstConfig is one way to get a join burst's serving certificates
// approved and issued; the harness (nodes, CSR creation, measurement) is
// the same for each.
type burstConfig struct {
	name string
	// start runs the approver until stop; reg holds its metrics (the
	// apiserver writes, and for stackward-approver the decision steps).
	start func(ctx context.Context, t *testing.T, cp *framework.ControlPlane, cloud *framework.SimCloud) (reg *prometheus.Registry, stop func())
}

// TestBenchJoinBurst sends 1,000 serving CSRs from 1,000 nodes (built with
// client-go's certificate request code, as the kubelet does) at 20 ms cloud
// latency, and measures created→approved and created→issued (signed by
// kube-controller-manager with the flags of bootstrap/init-configuration.yaml)
// for stackward-approver at its default flags and, as the reference ceiling,
// a trivial approver that approves on sight, in the same run; then (b)
// stackward-approver as the signer.
func TestBenchJoinBurst(t *testing.T) {
	results := map[string]any{}
	var trivialP99 float64
	for _, cfg := range []burstConfig{trivialApprover(), stackwardDefaults()} {
		t.Run(cfg.name, func(t *testing.T) {
			r := runBurst(t, cfg, false)
			results[cfg.name] = r
			if cfg.name == "trivial_approver" {
				trivialP99 = r["created_to_approved"].(Latencies).P99ms
			} else if trivialP99 > 0 {
				r["approved_p99_over_trivial_p99"] = r["created_to_approved"].(Latencies).P99ms / trivialP99
			}
		})
	}
	// The burst's approvals per second are bounded by how fast this harness
	// creates requests; the backlog run shows each approver's own pace.
	for _, cfg := range []burstConfig{trivialApprover(), stackwardDefaults()} {
		t.Run(cfg.name+" from a backlog", func(t *testing.T) {
			results[cfg.name+"_from_a_backlog"] = runBurst(t, cfg, true)
		})
	}
	// (b) The approver signs (--sign-with-ca-dir) on a control plane whose
	// kube-controller-manager has no kubelet-serving files, so only the
	// approver issues; approval and signing are one step.
	t.Run("builtin signer", func(t *testing.T) {
		framework.ReplaceSharedControlPlane(t, framework.ControlPlaneOptions{ApproverSigns: true})
		// The package's later tests expect kube-controller-manager signing.
		defer framework.ReplaceSharedControlPlane(t, framework.ControlPlaneOptions{})
		cfg := stackwardSigner()
		r := runBurst(t, cfg, false)
		if trivialP99 > 0 {
			r["approved_p99_over_trivial_p99"] = r["created_to_approved"].(Latencies).P99ms / trivialP99
			r["issued_p99_over_trivial_approved_p99"] = r["created_to_issued"].(Latencies).P99ms / trivialP99
		}
		results[cfg.name] = r
	})
	results["csrs"], results["cloud_latency_ms"] = burstCSRs, cloudLatency.Milliseconds()
	put(t, "join_burst_1000_csrs", results)
}

func stackwardDefaults() burstConfig {
	return burstConfig{name: "stackward_default_flags_kcm_signing", start: func(ctx context.Context, t *testing.T, cp *framework.ControlPlane, cloud *framework.SimCloud) (*prometheus.Registry, func()) {
		reg := prometheus.NewRegistry()
		// Zero options are the binary's flag defaults.
		stop, err := cp.RunApprover(ctx, cloud.ReaderCloudConf(t), approver.Options{Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		return reg, stop
	}}
}

// stackwardSigner is stackwardDefaults with --sign-with-ca-dir on the
// control plane's kubelet-serving CA.
func stackwardSigner() burstConfig {
	return burstConfig{name: "stackward_default_flags_builtin_signer", start: func(ctx context.Context, t *testing.T, cp *framework.ControlPlane, cloud *framework.SimCloud) (*prometheus.Registry, func()) {
		reg := prometheus.NewRegistry()
		stop, err := cp.RunApproverWith(ctx, cloud.ReaderCloudConf(t), approver.Options{Registerer: reg}, func(cfg *approver.Config) {
			cfg.SignWithCADir = filepath.Join(framework.KubernetesDir, "pki")
		})
		if err != nil {
			t.Fatal(err)
		}
		return reg, stop
	}}
}

// trivialApprover approves every pending kubelet serving CSR on sight, with
// the same client QPS as stackward-approver's defaults: the ceiling any
// approver can reach on this machine and apiserver.
func trivialApprover() burstConfig {
	return burstConfig{name: "trivial_approver", start: func(ctx context.Context, t *testing.T, cp *framework.ControlPlane, _ *framework.SimCloud) (*prometheus.Registry, func()) {
		cfg := rest.CopyConfig(cp.AdminConfig)
		cfg.QPS, cfg.Burst = approver.DefaultKubeAPIQPS, approver.DefaultKubeAPIBurst
		client := kubernetes.NewForConfigOrDie(cfg)
		ctx, cancel := context.WithCancel(ctx)
		reg := prometheus.NewRegistry()
		writes := prometheus.NewCounter(prometheus.CounterOpts{Name: writesMetric})
		reg.MustRegister(writes)
		queue := make(chan *certificatesv1.CertificateSigningRequest, 4*burstCSRs)
		f := informers.NewSharedInformerFactory(client, 0)
		inf := f.Certificates().V1().CertificateSigningRequests().Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			if c := obj.(*certificatesv1.CertificateSigningRequest); c.Spec.SignerName == certificatesv1.KubeletServingSignerName && framework.IsPending(c) {
				queue <- c
			}
		}}); err != nil {
			t.Fatal(err)
		}
		f.Start(ctx.Done())
		var wg sync.WaitGroup
		for range approver.DefaultWorkers {
			wg.Go(func() {
				for {
					select {
					case <-ctx.Done():
						return
					case c := <-queue:
						upd := c.DeepCopy()
						upd.Status.Conditions = append(upd.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
							Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Trivial", Message: "approved on sight"})
						writes.Inc()
						if _, err := client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, c.Name, upd, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
							t.Errorf("trivial approval of %s: %v", c.Name, err)
						}
					}
				}
			})
		}
		f.WaitForCacheSync(ctx.Done())
		return reg, func() { cancel(); wg.Wait(); f.Shutdown() }
	}}
}

// runBurst measures one configuration. With backlog, the approver starts
// only once all requests exist, so the approvals per second are its own
// capacity (first to last approval) rather than the creation rate.
func runBurst(t *testing.T, cfg burstConfig, backlog bool) map[string]any {
	cp := framework.SharedControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	n := burstCSRs
	prefix := strings.ReplaceAll(cfg.name, "_", "-")[:8] + "-"
	if backlog {
		prefix = "b" + prefix
	}
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{Latency: cloudLatency})
	for i := 1; i <= n; i++ {
		cloud.CreateServer(t, fmt.Sprintf("%s%04d", prefix, i), i, "m1.small", "az-1")
	}
	// A kubelet registers its Node before it asks for a serving certificate
	// (the approver decides only for a registered Node): before the clock.
	registerNodes(ctx, t, cp.Admin, prefix, n)
	defer parallel(t, n, 20, func(i int) error {
		return cp.Admin.CoreV1().Nodes().Delete(context.Background(), fmt.Sprintf("%s%04d", prefix, i), metav1.DeleteOptions{})
	})
	ids, err := newNodeIdentity(cp)
	if err != nil {
		t.Fatal(err)
	}
	// The nodes' client identities and keys are made before the clock
	// starts: a kubelet has them when it asks.
	clients := make([]kubernetes.Interface, n+1)
	keys := make([]*ecdsa.PrivateKey, n+1)
	parallel(t, n, 4, func(i int) error {
		rc, err := ids.config(fmt.Sprintf("%s%04d", prefix, i))
		if err != nil {
			return err
		}
		if clients[i], err = kubernetes.NewForConfig(rc); err != nil {
			return err
		}
		if keys[i], err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return err
		}
		// A kubelet asks for its serving certificate over the connection
		// it registered its Node on: open it now, not in the clock.
		_, err = clients[i].Discovery().ServerVersion()
		return err
	})

	var reg *prometheus.Registry
	if !backlog {
		var stop func()
		reg, stop = cfg.start(ctx, t, cp, cloud)
		defer stop()
	}
	// An informer, not a bare watch: the apiserver may close a watch that
	// falls behind a burst, and a reflector resumes it.
	obs := newBurstObserver(prefix)
	f := informers.NewSharedInformerFactory(cp.Admin, 0)
	watchCtx, stopWatching := context.WithCancel(ctx)
	if _, err := f.Certificates().V1().CertificateSigningRequests().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: obs.see, UpdateFunc: func(_, obj any) { obs.see(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	f.Start(watchCtx.Done())
	defer f.Shutdown()
	defer stopWatching() // before Shutdown, which waits for the informer
	f.WaitForCacheSync(watchCtx.Done())
	cloud.Sim.ResetCalls()
	writesBefore := 0.0
	if reg != nil {
		writesBefore = gatherSum(t, reg, writesMetric)
	}
	var created sync.Map
	start := time.Now()
	creating := make(chan struct{})
	defer func() { <-creating }()
	go func() {
		defer close(creating)
		parallel(t, n, burstSenders, func(i int) error {
			name := fmt.Sprintf("%s%04d", prefix, i)
			der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
				Subject:     pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}},
				DNSNames:    []string{name},
				IPAddresses: []net.IP{net.ParseIP(framework.NodeIP(i))},
			}, keys[i])
			if err != nil {
				return err
			}
			begin := time.Now()
			reqName, _, err := csr.RequestCertificateWithContext(ctx, clients[i], pemCSR(der), "", certificatesv1.KubeletServingSignerName, nil,
				[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}, keys[i])
			if err != nil {
				return err
			}
			created.Store(reqName, begin)
			return nil
		})
	}()
	if backlog {
		<-creating
		var stop func()
		reg, stop = cfg.start(ctx, t, cp, cloud)
		defer stop()
		writesBefore = 0 // a new approver: every write it makes is the backlog's
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Minute, true, func(context.Context) (bool, error) {
		return obs.issued() == n, nil
	})
	if err != nil {
		t.Fatalf("%d issued of %d: %v", obs.issued(), n, err)
	}
	obs.mu.Lock()
	denied := obs.denied
	approvedAt, issuedAt, firstApproval, lastApproval := maps.Clone(obs.approvedAt), maps.Clone(obs.issuedAt), obs.firstApproval, obs.lastApproval
	obs.mu.Unlock()
	if denied != "" {
		t.Fatalf("denied: %s", denied)
	}
	allIssued := time.Since(start)
	// Folded approval Events are written at the end of their window.
	time.Sleep(approver.DefaultEventWindow + time.Second)
	var toApproved, toIssued []time.Duration
	for name, at := range approvedAt {
		if begin, ok := created.Load(name); ok {
			toApproved = append(toApproved, at.Sub(begin.(time.Time)))
			toIssued = append(toIssued, issuedAt[name].Sub(begin.(time.Time)))
		}
	}
	calls := cloud.Sim.Calls()
	cloudCalls := SumCalls(calls, "compute.", "network.")
	writes := gatherSum(t, reg, writesMetric) - writesBefore
	steps := map[string]float64{}
	for _, step := range []string{"evaluate", "record"} {
		if mean, ok := gatherMean(t, reg, "stackward_csr_decision_step_duration_seconds", "step", step); ok {
			steps[step+"_mean_ms"] = mean * 1000
		}
	}
	if backlog {
		return map[string]any{
			"approved":                      len(approvedAt),
			"approvals_per_second":          float64(len(approvedAt)-1) / lastApproval.Sub(firstApproval).Seconds(),
			"cloud_calls_per_approval":      PerUnit(cloudCalls, len(approvedAt)),
			"calls_by_operation":            calls,
			"apiserver_writes_per_approval": writes / float64(len(approvedAt)),
			"decision_steps":                steps,
		}
	}
	return map[string]any{
		"approved":                      len(approvedAt),
		"seconds_to_all_approved":       lastApproval.Sub(start).Seconds(),
		"seconds_to_all_issued":         allIssued.Seconds(),
		"approvals_per_second":          float64(len(approvedAt)) / lastApproval.Sub(start).Seconds(),
		"created_to_approved":           Summarize(toApproved),
		"created_to_issued":             Summarize(toIssued),
		"cloud_calls":                   cloudCalls,
		"cloud_calls_per_approval":      PerUnit(cloudCalls, len(approvedAt)),
		"calls_by_operation":            calls,
		"apiserver_writes_per_approval": writes / float64(len(approvedAt)),
		"decision_steps":                steps,
	}
}

// writesMetric counts an approver's apiserver writes (approvals, Events,
// certificates).
const writesMetric = "stackward_approver_apiserver_writes_total"

// gatherMean is the mean of the histogram series of family name whose
// label is value; false when there is none or it is empty.
func gatherMean(t *testing.T, reg *prometheus.Registry, name, label, value string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value && m.GetHistogram().GetSampleCount() > 0 {
					return m.GetHistogram().GetSampleSum() / float64(m.GetHistogram().GetSampleCount()), true
				}
			}
		}
	}
	return 0, false
}

// gatherSum adds every series of a counter family in reg.
func gatherSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// burstObserver notes when each request of a burst is first seen approved
// and issued.
type burstObserver struct {
	prefix                      string
	mu                          sync.Mutex
	approvedAt, issuedAt        map[string]time.Time
	firstApproval, lastApproval time.Time
	denied                      string
}

func newBurstObserver(prefix string) *burstObserver {
	return &burstObserver{prefix: "system:node:" + prefix, approvedAt: map[string]time.Time{}, issuedAt: map[string]time.Time{}}
}

func (o *burstObserver) see(obj any) {
	c, ok := obj.(*certificatesv1.CertificateSigningRequest)
	if !ok || !strings.HasPrefix(c.Spec.Username, o.prefix) {
		return // other runs' requests
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if framework.Condition(c, certificatesv1.CertificateDenied) != nil {
		o.denied = framework.DescribeCSR(c)
	}
	if _, seen := o.approvedAt[c.Name]; !seen && framework.Condition(c, certificatesv1.CertificateApproved) != nil {
		o.approvedAt[c.Name], o.lastApproval = now, now
		if o.firstApproval.IsZero() {
			o.firstApproval = now
		}
	}
	if _, seen := o.issuedAt[c.Name]; !seen && len(c.Status.Certificate) > 0 {
		o.issuedAt[c.Name] = now
	}
}

func (o *burstObserver) issued() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.issuedAt)
}
