package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/loadbalancer"
	"github.com/stackward/stackward/pkg/openstack"
	"github.com/stackward/stackward/pkg/routes"
)

// LoadBalancer: Cloud alone serves nodes only (it needs nothing but Nova);
// WithServices adds the Octavia load balancers and Neutron routes.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return nil, false }

// WithServices is the provider with load balancers (Octavia, through
// pkg/loadbalancer) and routes (Neutron router routes, pkg/routes) when
// the cloud and the config have them.
type WithServices struct {
	*Cloud
	lb     *loadBalancers
	noLB   *noLoadBalancers // lb could not be built (nolb.go)
	routes *routes.Routes
	kube   *kubeAccess
	// podCIDRs checks pod CIDRs before routes are written.
	podCIDRs routes.PodCIDRPolicy
	// nodeMasks are the node CIDR mask flags, settled against
	// --cluster-cidr when the route controller starts.
	nodeMasks routes.NodeCIDRMaskSizes
	// adoptRoutes is [Route] adopt-upstream-routes; routeMemo outlives
	// each Routes() so that a verdict is said once (routeadopt.go).
	adoptRoutes bool
	routeMemo   adoptMemo
}

var _ cloudprovider.Interface = (*WithServices)(nil)

// ServiceOptions tune the load balancer orchestration.
type ServiceOptions struct {
	// LBRequeue is how soon a Service whose load balancer is busy is
	// synced again; zero means loadbalancer.DefaultRequeue.
	LBRequeue time.Duration
	// Registerer receives the per-Service reconcile metrics; nil keeps
	// them private.
	Registerer prometheus.Registerer
}

// NewWithServices builds the provider with New, then the Octavia and
// Neutron clients. A cloud without Octavia only logs that Services of type
// LoadBalancer are not served; a [Route] router-id on a Neutron without
// the extraroute extension is an error (the user asked for routes).
func NewWithServices(ctx context.Context, cfg *config.Config, clients *openstack.Clients, opts Options, sopts ServiceOptions) (*WithServices, error) {
	base, err := New(cfg, clients, opts)
	if err != nil {
		return nil, err
	}
	// The mask flags are checked now, not only when routes start.
	policy, err := routes.NewPodCIDRPolicy("", opts.NodeCIDRMasks)
	if err != nil {
		return nil, fmt.Errorf("new openstack provider: %w", err)
	}
	w := &WithServices{Cloud: base, kube: &kubeAccess{}, podCIDRs: policy, nodeMasks: opts.NodeCIDRMasks,
		adoptRoutes: cfg.Route.AdoptUpstream}
	logger := klog.FromContext(ctx)
	if cfg.LoadBalancer.Enabled {
		w.lb, err = newLoadBalancers(cfg.LoadBalancer, clients, w.kube, sopts, opts.LBStuckAfter)
		if err != nil {
			// Nodes and routes go on; each Service is told (nolb.go).
			logger.Error(err, "Services of type LoadBalancer are not served")
			w.noLB = &noLoadBalancers{why: err}
		}
	}
	if cfg.Route.RouterID != "" {
		ledger := &routes.ConfigMapLedger{Client: w.kube.get, Namespace: metav1.NamespaceSystem, Name: routes.DefaultLedgerName}
		w.routes, err = routes.New(ctx, clients, ledger, cfg.Route.RouterID)
		if err != nil {
			return nil, fmt.Errorf("[Route] router-id %s: %w", cfg.Route.RouterID, err)
		}
	}
	return w, nil
}

// Initialize also gives the load balancers and routes their apiserver
// client (the cluster UID, node names).
func (w *WithServices) Initialize(clientBuilder cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	w.Cloud.Initialize(clientBuilder, stop)
	client, err := clientBuilder.Client("stackward-openstack-services")
	if err != nil {
		klog.Background().Error(err, "No apiserver client: load balancers and routes cannot be managed")
		return
	}
	w.kube.setClient(client)
}

// LoadBalancer is the Octavia orchestration, when Octavia is there.
func (w *WithServices) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	switch {
	case w.lb != nil:
		return w.lb, true
	case w.noLB != nil:
		return w.noLB, true
	}
	return nil, false
}

// Routes are the Neutron router's routes, when [Route] router-id is set.
func (w *WithServices) Routes() (cloudprovider.Routes, bool) {
	if w.routes == nil {
		return nil, false
	}
	return &nodeRoutes{r: w.routes, nodes: w.kube.nodes, cidrs: w.podCIDRs, events: w.instances.eventRecorder,
		adoptUpstream: w.adoptRoutes, memo: &w.routeMemo}, true
}

// kubeAccess is what the load balancers and routes ask the apiserver.
type kubeAccess struct {
	mu     sync.Mutex
	client kubernetes.Interface
	uid    string
}

func (k *kubeAccess) setClient(client kubernetes.Interface) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.client = client
}

func (k *kubeAccess) get() (kubernetes.Interface, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.client == nil {
		return nil, errors.New("the provider is not initialized (no apiserver client)")
	}
	return k.client, nil
}

// clusterUID is the UID of the kube-system namespace: unique per cluster
// and stable for its life, it tells two clusters sharing a --cluster-name
// apart in the load balancers' tags. Read once.
func (k *kubeAccess) clusterUID(ctx context.Context) (string, error) {
	client, err := k.get()
	if err != nil {
		return "", err
	}
	k.mu.Lock()
	uid := k.uid
	k.mu.Unlock()
	if uid != "" {
		return uid, nil
	}
	ns, err := client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read namespace kube-system: %w", err)
	}
	k.mu.Lock()
	k.uid = string(ns.UID)
	k.mu.Unlock()
	return string(ns.UID), nil
}

// nodes lists the Nodes (from the watch cache: resourceVersion 0).
func (k *kubeAccess) nodes(ctx context.Context) ([]corev1.Node, error) {
	client, err := k.get()
	if err != nil {
		return nil, err
	}
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return list.Items, nil
}

// loadBalancers is cloudprovider.LoadBalancer over loadbalancer.Manager;
// each reconcile of a Service is timed and its outcome counted.
type loadBalancers struct {
	m       *loadbalancer.Manager
	metrics *lbMetrics
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

func newLoadBalancers(cfg config.LoadBalancer, clients *openstack.Clients, kube *kubeAccess, sopts ServiceOptions, stuckAfter time.Duration) (*loadBalancers, error) {
	oct, err := openstack.NewOctavia(clients)
	if err != nil {
		return nil, err
	}
	if clients.Neutron == nil {
		return nil, errors.New("load balancers need a Neutron client")
	}
	m := &loadbalancer.Manager{Octavia: oct, Neutron: clients.Neutron, Config: cfg, ClusterUID: kube.clusterUID,
		Annotate: kube.annotateService, Requeue: sopts.LBRequeue, StuckAfter: stuckAfter, ProjectID: clients.ProjectID}
	if cfg.ManageSecurityGroups {
		m.SecurityGroups = clients.Neutron
	}
	metrics, err := newLBMetrics(sopts.Registerer, m)
	if err != nil {
		return nil, err
	}
	return &loadBalancers{m: m, metrics: metrics}, nil
}

func (l *loadBalancers) GetLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	return l.m.Get(ctx, clusterName, svc)
}

func (l *loadBalancers) GetLoadBalancerName(_ context.Context, clusterName string, svc *corev1.Service) string {
	return loadbalancer.LoadBalancerName(clusterName, loadbalancer.ServiceRef{Namespace: svc.Namespace, Name: svc.Name})
}

func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) (status *corev1.LoadBalancerStatus, err error) {
	defer func(start time.Time) { l.metrics.observe("ensure", start, err) }(time.Now())
	return l.m.Ensure(ctx, clusterName, svc, nodes)
}

func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) (err error) {
	defer func(start time.Time) { l.metrics.observe("update", start, err) }(time.Now())
	return l.m.Update(ctx, clusterName, svc, nodes)
}

func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *corev1.Service) (err error) {
	defer func(start time.Time) { l.metrics.observe("delete", start, err) }(time.Now())
	return l.m.Delete(ctx, clusterName, svc)
}
