package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Who may use which load balancer: the namespace boundary.
//
// Every annotation is written by a namespace user, so an annotation alone
// never selects, joins, adopts or deletes anything that is not already the
// Service's. A Service uses:
//   - its own load balancer (found by name and this cluster's UID tag, or
//     adopted from the upstream CCM on evidence, adopt.go). A
//     load-balancer-id naming another load balancer never moves a Service
//     that has its own: the change is refused and its own stays;
//   - with load-balancer-id, a load balancer it is already a user of (its
//     owner tag is on it), when that load balancer is this cluster's:
//     shares made before, by Stackward or by the upstream CCM (adopted by
//     the Service that created it), keep working;
//   - with load-balancer-id, a new share of this cluster's load balancer
//     when its creator Service is in the same namespace, or when the
//     load balancer carries a consent tag for the joining namespace,
//     kube_shared_with=<namespace> (or kube_shared_with=*). On this
//     cluster's load balancers the creator Service's
//     AnnotationSharedWithNamespaces is the only source of those tags:
//     its sync writes them and removes any other;
//   - with load-balancer-id, a load balancer made outside Kubernetes (no
//     cluster's UID tag, not upstream's) only when it carries a consent
//     tag for the namespace: only the project's operator can write one.
//
// Never: another cluster's load balancer (another UID tag), or an
// untagged one upstream made for another Service of the cluster name
// until that Service has adopted it (it may be another cluster's of the
// same name). A refusal is an error naming the annotation and the load
// balancer, recorded as a Warning Event on the Service, with nothing
// changed.

// AnnotationSharedWithNamespaces, on the Service that created a load
// balancer, lists the namespaces whose Services may join it with
// load-balancer-id (comma-separated; "*" for every namespace). Without it
// only Services of the creator's namespace may join.
const AnnotationSharedWithNamespaces = "loadbalancer.stackward.io/shared-with-namespaces"

// consentPrefix starts a tag that lets a namespace's Services join a load
// balancer.
const consentPrefix = "kube_shared_with="

// ErrNotShareable means the load balancer a Service names is not one it
// may join; nothing was changed.
var ErrNotShareable = errors.New("may not join the load balancer")

// consents says whether lb's tags let namespace ns join it.
func consents(lb *LoadBalancer, ns string) bool {
	return slices.Contains(lb.Tags, consentPrefix+"*") || slices.Contains(lb.Tags, consentPrefix+ns)
}

// creatorOf is the Service a load balancer of this cluster was made for
// (its kube_service=<namespace>/<name> tag), the zero ServiceRef if none.
func creatorOf(lb *LoadBalancer) ServiceRef {
	for _, t := range lb.Tags {
		if rest, ok := strings.CutPrefix(t, serviceTagPrefix); ok {
			if ns, name, ok := strings.Cut(rest, "/"); ok {
				return ServiceRef{Namespace: ns, Name: name}
			}
		}
	}
	return ServiceRef{}
}

// CreatorOf is the Service a load balancer of a cluster was made for, as
// <namespace>/<name>; "" if its tags do not say (stackward doctor).
func CreatorOf(lb *LoadBalancer) string {
	if ref := creatorOf(lb); ref.Name != "" {
		return ref.String()
	}
	return ""
}

// isUser says whether the Service is one of lb's users already.
func isUser(lb *LoadBalancer, id Identity, svc *corev1.Service) bool {
	return slices.Contains(lb.Tags, ownerTag(id.ClusterName, refOf(svc)))
}

// mayJoin says whether svc may use lb, named by its load-balancer-id
// annotation, and why not. wait is how soon a Service upstream put on an
// unadopted load balancer looks again.
func mayJoin(lb *LoadBalancer, id Identity, svc *corev1.Service, wait time.Duration) error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w %s (%s): %w", ErrNotShareable, lb.Name, lb.ID, &InvalidAnnotationError{
			Annotation: AnnotationLoadBalancerID, Value: lb.ID, Reason: fmt.Sprintf(format, args...)})
	}
	ours := ClusterTag(id.ClusterUID)
	switch tag := clusterTagOf(lb); {
	case tag != "" && !slices.Contains(lb.Tags, ours):
		return refuse("it belongs to another cluster (%s); nothing was changed", tag)
	case tag == "" && strings.HasPrefix(lb.Name, ownerPrefix+id.ClusterName+"_") && isUser(lb, id, svc):
		// Upstream shared it with this Service's name: during a takeover
		// its creator adopts it within a sync or two.
		return notReady(wait, ReasonWaitingForAdoption, "load balancer %s (%s) that the upstream CCM shared with this Service is not this cluster's yet: "+
			"the Service it was made for adopts it first (if that Service is not in this cluster, the load balancer is another cluster's of the same name)", lb.Name, lb.ID)
	case tag == "" && strings.HasPrefix(lb.Name, ownerPrefix+id.ClusterName+"_"):
		return refuse("it carries no cluster's UID tag: the upstream CCM made it for another Service of a cluster named %q, "+
			"possibly another cluster of that name; it can be shared once that Service of this cluster has adopted it", id.ClusterName)
	case tag == "":
		if consents(lb, svc.Namespace) {
			return nil
		}
		return refuse("it was made outside Kubernetes; an operator lets namespace %s use it by tagging it %s%s (or %s*)",
			svc.Namespace, consentPrefix, svc.Namespace, consentPrefix)
	}
	if isUser(lb, id, svc) || consents(lb, svc.Namespace) {
		return nil
	}
	creator := creatorOf(lb)
	if creator.Namespace == svc.Namespace {
		return nil
	}
	return refuse("it is Service %s's, of another namespace; that Service lets namespace %s join by listing it in its %s annotation",
		creator, svc.Namespace, AnnotationSharedWithNamespaces)
}

// route is the load balancer a Service uses: its own (possibly nil: none
// yet) or, through load-balancer-id, a shared one. A Service that has its
// own keeps it whatever the annotation says (refuse says why, for Ensure).
type route struct {
	own, shared *LoadBalancer
	// refused: the annotation names a load balancer the Service may not
	// use; Ensure reports it, Get and Delete ignore it.
	refused error
}

// routeOf finds the Service's load balancer: its own first, then the one
// its annotation names.
func (m *Manager) routeOf(ctx context.Context, id Identity, svc *corev1.Service, use lookup) (route, error) {
	lbID := svc.Annotations[AnnotationLoadBalancerID]
	var named *LoadBalancer
	var gone error // the annotation names a load balancer that does not exist
	if lbID != "" {
		shared, err := m.sharedLB(ctx, id, svc)
		if err != nil {
			var inv *InvalidAnnotationError
			if !errors.As(err, &inv) {
				return route{}, err
			}
			// Named load balancer gone: the Service may still have its own
			// (the upstream CCM wrote its own ID there, and that load
			// balancer was replaced since: recreate.go, stranded.go).
			gone = err
		}
		named = shared
		if named != nil && use != forGet {
			// This cluster's, named for an older cluster name (rename.go).
			if named, err = m.renameIfStale(ctx, id, svc, named); err != nil {
				return route{}, err
			}
		}
	}
	own, err := m.find(ctx, id, svc, use)
	if err != nil {
		return route{}, err
	}
	if own != nil {
		if gone != nil && use == forEnsure {
			m.correctLoadBalancerID(ctx, svc, lbID, own)
		}
		r := route{own: own}
		if named != nil && named.ID != own.ID {
			r.refused = &InvalidAnnotationError{Annotation: AnnotationLoadBalancerID, Value: lbID,
				Reason: fmt.Sprintf("the Service has its own load balancer %s (%s), which keeps serving it; a Service cannot move to another load balancer: "+
					"remove the annotation, or delete the Service and create it again with the annotation", own.Name, own.ID)}
		}
		return r, nil
	}
	if gone != nil && use == forEnsure {
		return route{}, gone // a new Service naming no load balancer: the annotation's error
	}
	if named == nil {
		return route{}, nil
	}
	return route{shared: named, refused: mayJoin(named, id, svc, m.requeue())}, nil
}

// correctLoadBalancerID points the Service's load-balancer-id annotation,
// which names a load balancer that is gone, at the Service's own: the
// upstream CCM wrote it (its own load balancer's ID) and reads it back
// after a switch back. Failing to is logged, not an error: the sync goes
// on with the Service's own load balancer either way.
func (m *Manager) correctLoadBalancerID(ctx context.Context, svc *corev1.Service, gone string, own *LoadBalancer) {
	logger := klog.FromContext(ctx).WithValues("service", refOf(svc).String(), "annotation", AnnotationLoadBalancerID, "gone", gone, "own", own.ID)
	if m.Annotate == nil {
		return
	}
	if err := m.Annotate(ctx, svc, map[string]string{AnnotationLoadBalancerID: own.ID}); err != nil {
		logger.Error(err, "Could not point the annotation at the Service's own load balancer; it names one that is gone")
		return
	}
	logger.Info("The annotation named a load balancer that is gone; it now names the Service's own")
}
