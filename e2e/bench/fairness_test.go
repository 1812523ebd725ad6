//go:build e2e && bench

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/certificate/csr"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/approver"
)

const (
	floodCSRs      = 20000
	fairnessJoins  = 100
	fairnessRounds = 3 // per condition: the shared machine's load moves one round's figures by ±50 %
	floodSenders   = 32
	fairnessTarget = 1.5 // the joining nodes' p99 beside the flood, over their p99 alone
	// paddedFlood requests of paddedSize from one node: the CI e2e
	// (e2e/approver) sends 200, this the full 500 (500 MiB through etcd
	// and the apiserver's watch cache is too slow and too big for CI).
	paddedFlood, paddedSize = 500, 1 << 20
	// paddedHeapBound is the approver's heap growth allowed under the
	// padded flood: whole, the requests would be 500 MiB in its cache.
	paddedHeapBound = 48 << 20
	decisionsMetric = "stackward_csr_decisions_total"
)

// TestBenchFloodFairness measures what one node's flood costs the others:
// rounds of 100 nodes joining (one serving CSR each, created→approved on a
// real apiserver, 20 ms cloud latency, one stackward-approver at its
// default flags throughout), first on a quiet approver, then beside 20,000
// pending requests of one node that the approver has already looked at
// (approved up to the node's certificate budget, the rest held back by
// the per-node cap). The report gives each round's p50/p99, the median
// round's of each condition and their ratios; the target is a p99 ratio
// within 1.5.
func TestBenchFloodFairness(t *testing.T) {
	lab := newFloodLab(t)
	quiet := lab.rounds("fq", fairnessRounds)
	flood := lab.flood(floodCSRs, 0)
	flooded := lab.rounds("ff", fairnessRounds)
	figures := compareRounds(quiet, flooded)
	figures["flood"] = flood
	figures["flood_csrs"] = floodCSRs
	figures["p99_ratio_target"] = fairnessTarget
	put(t, "flood_fairness_20000_csrs", figures)
	if n := lab.approvedOf(flood["node"].(string)); n > approver.DefaultMaxIssuedPerNode {
		t.Errorf("the flooding node was approved %d certificates, over its budget of %d", n, approver.DefaultMaxIssuedPerNode)
	}
}

// TestBenchPaddedFlood: one node sends 500 requests of ~1 MiB each (valid
// and signed, padded with DNS names). The chart's admission policy would
// refuse them; it is not installed here, as on a cluster whose operator
// turned it off: this is the approver's own defense. Its heap grows by
// less than paddedHeapBound (the cache keeps no body of an oversize
// request), the node gets its denial budget's worth of denials and nothing
// else, and rounds of 100 other nodes are approved as fast as before it.
func TestBenchPaddedFlood(t *testing.T) {
	lab := newFloodLab(t)
	quiet := lab.rounds("pq", fairnessRounds)
	before := heapAfterGC()
	flood := lab.flood(paddedFlood, paddedSize)
	grown := float64(heapAfterGC()-before) / (1 << 20)
	flooded := lab.rounds("pf", fairnessRounds)
	figures := compareRounds(quiet, flooded)
	figures["flood"] = flood
	figures["flood_csrs"], figures["flood_csr_bytes"] = paddedFlood, paddedSize
	figures["approver_heap_growth_mib"] = grown
	figures["approver_heap_bound_mib"] = paddedHeapBound >> 20
	figures["requests_whole_mib"] = paddedFlood * paddedSize >> 20
	put(t, "padded_flood_500_x_1mib", figures)
	if grown > paddedHeapBound>>20 {
		t.Errorf("the approver's heap grew by %.0f MiB under the flood, over %d MiB", grown, paddedHeapBound>>20)
	}
	node := flood["node"].(string)
	if d := lab.deniedOf(node); d != approver.DefaultMaxDenialsPerNode {
		t.Errorf("%d of the flood denied, want the denial budget's %d (the rest left pending, unwritten)", d, approver.DefaultMaxDenialsPerNode)
	}
	if a := lab.approvedOf(node); a != 0 {
		t.Errorf("%d of the padded flood approved", a)
	}
}

// compareRounds reports both conditions' rounds, the median round of each
// (by p99, and by p50) and the ratios of the medians.
func compareRounds(quiet, flooded []round) map[string]any {
	median := func(rs []round, f func(round) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	p50 := func(r round) float64 { return r.CreatedToApproved.P50ms }
	p99 := func(r round) float64 { return r.CreatedToApproved.P99ms }
	createP50 := func(r round) float64 { return r.CreateCall.P50ms }
	return map[string]any{
		"joining_nodes_per_round":      fairnessJoins,
		"cloud_latency_ms":             cloudLatency.Milliseconds(),
		"rounds_without_flood":         quiet,
		"rounds_with_flood":            flooded,
		"without_flood_median_p50_ms":  median(quiet, p50),
		"without_flood_median_p99_ms":  median(quiet, p99),
		"with_flood_median_p50_ms":     median(flooded, p50),
		"with_flood_median_p99_ms":     median(flooded, p99),
		"p50_ratio":                    median(flooded, p50) / median(quiet, p50),
		"p99_ratio":                    median(flooded, p99) / median(quiet, p99),
		"create_call_median_p50_ratio": median(flooded, createP50) / median(quiet, createP50),
		"latency":                      "created_to_approved: from the node's create call to an informer seeing the Approved condition",
		"order":                        "the quiet rounds run before the flood, the flood rounds after it, on one approver",
	}
}

// floodLab is one approver on the shared control plane and a cloud whose
// servers the rounds' nodes are; an informer notes every approval.
type floodLab struct {
	t     *testing.T
	ctx   context.Context
	cp    *framework.ControlPlane
	cloud *framework.SimCloud
	ids   *nodeIdentity
	reg   *prometheus.Registry
	next  int // the lab index of the next node (its server's and IP's)

	mu         sync.Mutex
	approvedAt map[string]time.Time
	approved   map[string]int // by username
	denied     map[string]int
}

func newFloodLab(t *testing.T) *floodLab {
	cp := framework.SharedControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	t.Cleanup(cancel)
	ids, err := newNodeIdentity(cp)
	if err != nil {
		t.Fatal(err)
	}
	l := &floodLab{t: t, ctx: ctx, cp: cp, cloud: framework.StartSimCloud(t, framework.SimCloudOptions{Latency: cloudLatency}), ids: ids, next: 1,
		approvedAt: map[string]time.Time{}, approved: map[string]int{}, denied: map[string]int{}}
	reg, stop := stackwardDefaults().start(ctx, t, cp, l.cloud)
	t.Cleanup(stop)
	l.reg = reg
	f := informers.NewSharedInformerFactory(cp.Admin, 0)
	inf := f.Certificates().V1().CertificateSigningRequests().Informer()
	if err := inf.SetTransform(func(obj any) (any, error) {
		if c, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
			c.Spec.Request, c.ManagedFields = nil, nil // a padded flood is not this observer's to keep
		}
		return obj, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: l.see, UpdateFunc: func(_, obj any) { l.see(obj) }}); err != nil {
		t.Fatal(err)
	}
	watchCtx, stopWatching := context.WithCancel(ctx)
	f.Start(watchCtx.Done())
	t.Cleanup(f.Shutdown)
	t.Cleanup(stopWatching) // before Shutdown, which waits for the informer
	f.WaitForCacheSync(watchCtx.Done())
	return l
}

func (l *floodLab) see(obj any) {
	c, ok := obj.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, seen := l.approvedAt[c.Name]; seen {
		return
	}
	switch {
	case framework.Condition(c, certificatesv1.CertificateApproved) != nil:
		l.approvedAt[c.Name] = now
		l.approved[c.Spec.Username]++
	case framework.Condition(c, certificatesv1.CertificateDenied) != nil:
		l.approvedAt[c.Name] = time.Time{} // decided; not an approval
		l.denied[c.Spec.Username]++
	}
}

func (l *floodLab) approvedOf(node string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.approved["system:node:"+node]
}

func (l *floodLab) deniedOf(node string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.denied["system:node:"+node]
}

// nodes makes n registered nodes named prefix-<k> with their servers, and
// returns them ready to ask (client connected, request built, padded to
// about pad bytes).
func (l *floodLab) nodes(prefix string, n, pad int) []*floodNode {
	out := make([]*floodNode, n)
	first := l.next
	l.next += n
	for k := 1; k <= n; k++ {
		l.cloud.CreateServer(l.t, fmt.Sprintf("%s-%04d", prefix, k), first+k-1, "m1.small", "az-1")
	}
	parallel(l.t, n, 8, func(k int) error {
		i := first + k - 1
		name := fmt.Sprintf("%s-%04d", prefix, k)
		node, err := newFloodNode(l.ids, name, framework.NodeIP(i), pad)
		if err != nil {
			return err
		}
		out[k-1] = node
		return node.register(l.ctx, framework.NodeIP(i))
	})
	l.t.Cleanup(func() {
		parallel(l.t, n, 20, func(k int) error {
			return l.cp.Admin.CoreV1().Nodes().Delete(context.Background(), out[k-1].name, metav1.DeleteOptions{})
		})
	})
	return out
}

// rounds runs count rounds of fairnessJoins nodes joining.
func (l *floodLab) rounds(prefix string, count int) []round {
	var out []round
	for r := 1; r <= count; r++ {
		out = append(out, l.join(fmt.Sprintf("%s%d", prefix, r)))
	}
	return out
}

// join has fairnessJoins new nodes ask for a serving certificate at once
// and returns their created→approved latencies.
func (l *floodLab) join(prefix string) round {
	t := l.t
	nodes := l.nodes(prefix, fairnessJoins, 0)
	if dir := os.Getenv("STACKWARD_BENCH_CPUPROFILE_DIR"); dir != "" {
		// This process runs the approver: where its time goes in a round.
		f, err := os.Create(filepath.Join(dir, "fairness-"+prefix+".cpu"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	var created sync.Map
	var mu sync.Mutex
	var creates []time.Duration
	parallel(t, fairnessJoins, burstSenders, func(k int) error {
		begin := time.Now()
		name, err := askServing(l.ctx, nodes[k-1])
		if err != nil {
			return err
		}
		created.Store(name, begin)
		mu.Lock()
		creates = append(creates, time.Since(begin))
		mu.Unlock()
		return nil
	})
	var latencies []time.Duration
	err := wait.PollUntilContextTimeout(l.ctx, 20*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		latencies = latencies[:0]
		created.Range(func(name, begin any) bool {
			if at, ok := l.approvedAt[name.(string)]; ok && !at.IsZero() {
				latencies = append(latencies, at.Sub(begin.(time.Time)))
			}
			return true
		})
		return len(latencies) == fairnessJoins, nil
	})
	if err != nil {
		t.Fatalf("round %s: %d of %d joining nodes approved: %v", prefix, len(latencies), fairnessJoins, err)
	}
	return round{CreatedToApproved: Summarize(latencies), CreateCall: Summarize(creates)}
}

// round is one round's figures: created→approved, and the apiserver's
// share of it (the create call alone), which the approver cannot change.
type round struct {
	CreatedToApproved Latencies `json:"created_to_approved"`
	CreateCall        Latencies `json:"create_call"`
}

// flood has one new node send count requests padded to about pad bytes
// (0: its kubelet-sized request, valid) and waits until the approver has
// looked at each: the flood is there, not still arriving, when the next
// round joins. The flood is deleted when the test ends (the package's
// later benchmarks share the control plane).
func (l *floodLab) flood(count, pad int) map[string]any {
	t := l.t
	node := l.nodes("flooder", 1, pad)[0]
	before := gatherSum(t, l.reg, decisionsMetric)
	names := make([]string, count)
	start := time.Now()
	senders := floodSenders
	if pad > 0 {
		senders = 4 // a megabyte each: the apiserver's pace, not ours
	}
	t.Cleanup(func() {
		// One by one: a collection delete of 20,000 outlives the
		// apiserver's request timeout.
		parallel(t, count, floodSenders, func(i int) error {
			if names[i-1] == "" {
				return nil // never created
			}
			err := l.cp.Admin.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), names[i-1], metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
	})
	parallel(t, count, senders, func(i int) error {
		name, err := node.create(l.ctx, fmt.Sprintf("flood-%s-%05d", node.name, i))
		if err == nil {
			names[i-1] = name
		}
		return err
	})
	created := time.Since(start)
	err := wait.PollUntilContextTimeout(l.ctx, 100*time.Millisecond, 10*time.Minute, true, func(context.Context) (bool, error) {
		return gatherSum(t, l.reg, decisionsMetric)-before >= float64(count), nil
	})
	if err != nil {
		t.Fatalf("the approver looked at %.0f of the %d requests of the flood: %v", gatherSum(t, l.reg, decisionsMetric)-before, count, err)
	}
	return map[string]any{
		"node":                         node.name,
		"seconds_to_create":            created.Seconds(),
		"seconds_until_all_looked_at":  time.Since(start).Seconds(),
		"approver_decisions_recorded":  gatherSum(t, l.reg, decisionsMetric) - before,
		"approved_of_the_flood_so_far": l.approvedOf(node.name),
		"denied_of_the_flood_so_far":   l.deniedOf(node.name),
	}
}

func heapAfterGC() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// askServing creates a kubelet-serving request as a kubelet does.
func askServing(ctx context.Context, n *floodNode) (string, error) {
	name, _, err := csr.RequestCertificateWithContext(ctx, n.clientset, n.request, "", certificatesv1.KubeletServingSignerName, nil,
		[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}, n.key)
	return name, err
}
