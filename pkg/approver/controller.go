package approver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Options configure a Controller. The zero value of each field is usable.
type Options struct {
	Policy
	// LeavePendingOnDeny records what would have been denied (Event, log,
	// metric) but leaves the request pending, for a dry run.
	LeavePendingOnDeny bool
	// SubjectAccessReview also requires that the requestor may create
	// certificatesigningrequests/selfnodeserver.
	SubjectAccessReview bool
	// MaxPendingPerNode is how many pending requests of one node are
	// considered at a time, oldest first; 0 means no cap.
	MaxPendingPerNode int
	// CloudQPS and CloudBurst limit the cloud operations of the cloud
	// built from a cloud.conf (a listing that answers a batch of requests
	// counts once); CloudQPS 0 means no limit. CoalesceWindow is the least
	// time between two of its lookups (0: DefaultCoalesceWindow).
	CloudQPS       float64
	CloudBurst     int
	CoalesceWindow time.Duration
	// Workers is the number of requests decided in parallel (default
	// DefaultWorkers). Requests that wait for the cloud together share one
	// lookup, so this is also the largest batch.
	Workers int
	// EventWindow folds identical approval (and could-not-check) Events:
	// the first is recorded at once, the others of the window as one
	// summary naming them. Denials always get their own. Default
	// DefaultEventWindow; negative: one Event per decision.
	EventWindow time.Duration
	// Registerer receives the metrics; nil keeps them in a private registry.
	Registerer prometheus.Registerer
	// Recorder receives the Events; nil records them to the apiserver.
	Recorder record.EventRecorder
	// RateLimiter spaces retries of undecidable requests; nil is
	// exponential from 1s to 10s per request. There is no overall limit:
	// retries waiting for the cloud together share one lookup, and the
	// cloud's rate limit counts those.
	RateLimiter workqueue.TypedRateLimiter[string]
	// Resync re-examines pending requests that saw no change (those left
	// pending by a dry run or over the cap); default 10 minutes.
	Resync time.Duration
	// WaitRecheck is how often a request of an instance that is not
	// running is looked at again; default 15 seconds.
	WaitRecheck time.Duration
	// Signer, when set, issues the certificate of every request the
	// approver approves (--sign-with-ca-dir).
	Signer Signer
	// MaxIssuedPerNode and MaxDenialsPerNode are per-node budgets over
	// NodeBudgetWindow (see budget.go): approvals over the first stay
	// pending with an Event, denials over the second stay pending without
	// one. 0 takes the default; negative: no budget.
	MaxIssuedPerNode  int
	MaxDenialsPerNode int
	NodeBudgetWindow  time.Duration
	// EventQPS limits the Events written (new ones; 0: DefaultEventQPS,
	// negative: no limit), apart from the decisions' writes.
	EventQPS float64
}

// DefaultEventQPS lets a join burst's folded Events through and keeps a
// flood's from competing with approvals for the apiserver client.
const DefaultEventQPS = 5

// byUsername indexes CSRs by spec.username, to count a node's pending ones.
const byUsername = "byUsername"

// Controller approves or denies kubelet serving CSRs as an Evaluator
// decides, and records each outcome.
type Controller struct {
	client    kubernetes.Interface
	evaluator *Evaluator
	opts      Options
	metrics   *metrics
	recorder  record.EventRecorder
	events    *eventAggregator
	queue     workqueue.TypedRateLimitingInterface[string]

	csrFactory, nodeFactory informers.SharedInformerFactory
	csrInformer             cache.SharedIndexInformer
	csrs                    certlisters.CertificateSigningRequestLister
	nodes                   corelisters.NodeLister
	synced                  []cache.InformerSynced
	broadcaster             record.EventBroadcaster
	now                     func() time.Time

	// dryRunPending holds the requests left pending by LeavePendingOnDeny:
	// they wait for a person and must not hold a node's newer requests
	// back behind the per-node cap.
	dryRunPending sync.Map // CSR name → struct{}
	// waiting holds the last Wait message per request, so its Event is
	// recorded once per state, not at every recheck.
	waiting sync.Map // CSR name → string
	// order keeps each node's pending requests in decision order.
	order *nodeOrder
	// deferrals writes the debug lines of deferred requests, rate-limited.
	deferrals *deferralLog
	// issuedBudget and denialBudget are the per-node budgets.
	issuedBudget, denialBudget *nodeBudget
	// issued holds the requests this process wrote a certificate for: the
	// informer may still show one approved and unsigned (the event of the
	// certificate's write not yet arrived), and it must not be signed and
	// written twice. Forgotten when the request is deleted.
	issued sync.Map // CSR name → struct{}
	// oversize holds, by UID, the size of each pending request whose body
	// the cache dropped for being larger than a kubelet ever sends: it is
	// denied from this alone, and a flood of them costs no memory.
	oversize sync.Map // oversizeKey → int
	// trimmed holds the requests whose labels, annotations, finalizers or
	// owner references the cache dropped: a write of one sends the live
	// object's back (see forWrite).
	trimmed sync.Map // oversizeKey → struct{}
	// written holds the requests this process wrote a decision for until
	// the informer shows it: a sync meanwhile (another request's decision
	// re-queues it) sees the stale, pending copy and must not decide, write
	// and spend the node's budget again.
	written sync.Map // CSR name → struct{}
	// reported holds the misconfigurations already logged and recorded
	// (a control-plane endpoint that is a node's address), once each.
	reported sync.Map // message → struct{}
}

// NewController builds a Controller on client; Run starts it.
func NewController(client kubernetes.Interface, cloud Cloud, opts Options) (*Controller, error) {
	if client == nil || cloud == nil {
		return nil, errors.New("new approver: a client and a cloud are required")
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.EventWindow == 0 {
		opts.EventWindow = DefaultEventWindow
	}
	if opts.Resync <= 0 {
		opts.Resync = 10 * time.Minute
	}
	if opts.WaitRecheck <= 0 {
		opts.WaitRecheck = 15 * time.Second
	}
	if opts.MaxIssuedPerNode == 0 {
		opts.MaxIssuedPerNode = DefaultMaxIssuedPerNode
	}
	if opts.MaxDenialsPerNode == 0 {
		opts.MaxDenialsPerNode = DefaultMaxDenialsPerNode
	}
	if opts.NodeBudgetWindow <= 0 {
		opts.NodeBudgetWindow = DefaultNodeBudgetWindow
	}
	if opts.EventQPS == 0 {
		opts.EventQPS = DefaultEventQPS
	}
	reg := opts.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("new approver: %w", err)
	}
	rl := opts.RateLimiter
	if rl == nil {
		// Capped at 10 s so that a burst held up by a cloud outage is
		// decided within seconds of the recovery, not minutes.
		rl = workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 10*time.Second)
	}
	wq, err := newWorkqueueMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("new approver: %w", err)
	}
	c := &Controller{
		client:   client,
		opts:     opts,
		metrics:  m,
		recorder: opts.Recorder,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[string]{
			Name: "stackward-approver", MetricsProvider: wq}),
		now:    time.Now,
		events: newEventAggregator(opts.Recorder, opts.EventWindow),
	}
	c.order = newNodeOrder()
	c.deferrals = newDeferralLog(func() time.Time { return c.now() }, deferralLogInterval)
	c.issuedBudget = newNodeBudget(opts.MaxIssuedPerNode, opts.NodeBudgetWindow, func() time.Time { return c.now() })
	c.denialBudget = newNodeBudget(opts.MaxDenialsPerNode, opts.NodeBudgetWindow, func() time.Time { return c.now() })
	// Only kubelet serving requests are listed and watched; the handler
	// filters again for clients (and fakes) that ignore field selectors.
	c.csrFactory = informers.NewSharedInformerFactoryWithOptions(client, opts.Resync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.signerName", certificatesv1.KubeletServingSignerName).String()
		}))
	c.nodeFactory = informers.NewSharedInformerFactory(client, 0)
	csrInf := c.csrFactory.Certificates().V1().CertificateSigningRequests()
	nodeInf := c.nodeFactory.Core().V1().Nodes()
	c.csrInformer = csrInf.Informer()
	if err := c.csrInformer.AddIndexers(cache.Indexers{byUsername: func(obj any) ([]string, error) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
			return []string{csr.Spec.Username}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("new approver: CSR index: %w", err)
	}
	// The approver reads a Node's name and providerID only: drop status
	// (images, conditions) and managed fields to keep a large cluster's
	// cache small.
	if err := nodeInf.Informer().SetTransform(slimNode); err != nil {
		return nil, fmt.Errorf("new approver: node transform: %w", err)
	}
	if err := c.csrInformer.SetTransform(c.slimCSR); err != nil {
		return nil, fmt.Errorf("new approver: CSR transform: %w", err)
	}
	// A request waits for its Node (checkInstance); the Node's arrival,
	// or its providerID set by the CCM, is when to look again.
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.onNode,
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(*corev1.Node)
			n, ok2 := obj.(*corev1.Node)
			if ok1 && ok2 && o.Spec.ProviderID != n.Spec.ProviderID {
				c.onNode(obj)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("new approver: node handler: %w", err)
	}
	c.csrs, c.nodes = csrInf.Lister(), nodeInf.Lister()
	c.synced = []cache.InformerSynced{c.csrInformer.HasSynced, nodeInf.Informer().HasSynced}
	if err := reg.Register(newPendingCollector(c.csrs, c.csrInformer.HasSynced, func() time.Time { return c.now() })); err != nil {
		return nil, fmt.Errorf("new approver: register pending CSR metrics: %w", err)
	}
	if _, err := c.csrInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onChange(obj, false) },
		UpdateFunc: func(_, obj any) { c.onChange(obj, false) },
		DeleteFunc: func(obj any) { c.onChange(obj, true) },
	}); err != nil {
		return nil, fmt.Errorf("new approver: CSR handler: %w", err)
	}
	var sar SubjectAccessReviewer
	if opts.SubjectAccessReview {
		sar = client.AuthorizationV1().SubjectAccessReviews()
	}
	c.evaluator = NewEvaluator(cloud, c.getNode, sar, opts.Policy)
	return c, nil
}

// onNode queues the pending requests of a Node's kubelet.
func (c *Controller) onNode(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	for _, name := range c.order.first(nodeUserPrefix+n.Name, c.opts.MaxPendingPerNode) {
		c.queue.Add(name)
	}
}

func (c *Controller) getNode(_ context.Context, name string) (*corev1.Node, error) {
	n, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("node cache: %w", err)
	}
	return n, nil
}

// Evaluator returns the controller's evaluator (for explaining decisions).
func (c *Controller) Evaluator() *Evaluator { return c.evaluator }

// HasSynced reports whether the CSR and Node caches are filled.
func (c *Controller) HasSynced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

// onChange queues a pending kubelet serving request. When a node's request
// is decided or deleted, its other pending requests are queued too: one of
// them may have been held back by the per-node cap.
func (c *Controller) onChange(obj any, gone bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	csr, ok := obj.(*certificatesv1.CertificateSigningRequest)
	if !ok || csr.Spec.SignerName != certificatesv1.KubeletServingSignerName {
		return
	}
	live := !gone && isPending(csr) && csr.DeletionTimestamp == nil
	if _, held := c.dryRunPending.Load(csr.Name); live && !held {
		c.order.put(csr)
	} else {
		c.order.remove(csr.Name)
	}
	if live || (!gone && c.opts.Signer != nil && awaitsOurSignature(csr)) {
		c.queue.Add(csr.Name)
		return
	}
	c.oversize.Delete(oversizeKey(csr))
	c.trimmed.Delete(oversizeKey(csr))
	c.written.Delete(csr.Name)
	c.dryRunPending.Delete(csr.Name)
	c.waiting.Delete(csr.Name)
	if _, still, _ := c.csrInformer.GetIndexer().GetByKey(csr.Name); !still {
		c.issued.Delete(csr.Name)
	}
	if c.opts.MaxPendingPerNode > 0 {
		// Only the oldest few can be decided next: queueing all of a
		// flooding node's requests at every decision is quadratic.
		for _, next := range c.order.first(csr.Spec.Username, c.opts.MaxPendingPerNode) {
			c.queue.Add(next)
		}
	}
}

func isPending(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, cond := range csr.Status.Conditions {
		switch cond.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return false
		}
	}
	return len(csr.Status.Certificate) == 0
}

// Run starts the informers and workers and blocks until ctx is done.
func (c *Controller) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("approver")
	ctx = klog.NewContext(ctx, logger)
	defer c.queue.ShutDown()
	if c.recorder == nil {
		c.broadcaster = record.NewBroadcaster(record.WithContext(ctx))
		sink := &countingEventSink{
			EventSinkImpl: typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")}, writes: c.metrics.writes, dropped: c.metrics.eventsDropped}
		if c.opts.EventQPS > 0 {
			sink.limiter = rate.NewLimiter(rate.Limit(c.opts.EventQPS), max(1, int(4*c.opts.EventQPS)))
		}
		c.broadcaster.StartRecordingToSink(sink)
		c.broadcaster.StartStructuredLogging(4)
		defer c.broadcaster.Shutdown()
		c.recorder = c.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "stackward-approver"})
	}
	c.events.recorder = c.recorder
	defer c.events.flush() // before the broadcaster shuts down
	c.csrFactory.Start(ctx.Done())
	c.nodeFactory.Start(ctx.Done())
	defer c.csrFactory.Shutdown()
	defer c.nodeFactory.Shutdown()
	logger.Info("Waiting for CSR and Node caches")
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("approver: caches did not sync: %w", context.Cause(ctx))
	}
	logger.Info("Deciding kubelet serving CSRs", "workers", c.opts.Workers)
	var wg sync.WaitGroup
	for range c.opts.Workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	logger.Info("Stopped deciding CSRs")
	return nil
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}
